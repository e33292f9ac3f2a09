//! Record and replay: upstream exchanges written to a cassette (JSON Lines, `format.rs`) with their
//! timing, and played back from it.

pub mod format;
pub mod har;
pub mod read;
pub mod record;
pub mod redact;
pub mod replay;
pub mod ws_frames;
