//! Record and replay: upstream exchanges written to a cassette (JSON Lines, `format.rs`) with their
//! timing, and played back from it.

pub mod format;
pub mod replay;
