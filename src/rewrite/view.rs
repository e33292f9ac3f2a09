//! What a regex rule's automata read of a stage's hay when that is not the bytes themselves: the line view
//! (see `lines`), and astral characters' last bytes in the view of `js_regex::LowView` on top. Kept between
//! chunks for the bytes a stage holds back, so that a chunk adds the view of its own bytes only: viewing
//! the held bytes again at every chunk made tiny chunks cost `held * chunks`.

use super::js_regex::LowView;
use super::lines;

/// A stage's view of its hay; between chunks, of the held bytes, with its first `viewed` bytes final.
#[derive(Default)]
pub(super) struct HeldView {
    view: Vec<u8>,
    viewed: usize,
}

impl HeldView {
    /// The view of `data`, a hay that starts with the held bytes (or nothing is held: see
    /// [`HeldView::forget`]). `lines`: the line view; `low`: the low-surrogate view on top.
    pub(super) fn of(&mut self, data: &[u8], lines: bool, low: Option<&LowView>) -> &[u8] {
        let viewed = self.viewed.min(self.view.len()).min(data.len());
        self.view.truncate(viewed);
        if lines {
            lines::extend_line_view(&data[viewed..], &mut self.view);
        } else {
            self.view.extend_from_slice(&data[viewed..]);
        }
        if let Some(low) = low {
            low.apply_from(data, &mut self.view, viewed);
        }
        &self.view
    }

    /// Nothing is held: the next hay is viewed whole.
    pub(super) fn forget(&mut self) {
        self.viewed = 0;
    }

    /// After a search of a hay of `len` bytes, whose first `written` are written out: the rest is held,
    /// and its view is final (a hay ends where the view of its last byte is known).
    pub(super) fn hold_from(&mut self, written: usize, len: usize) {
        self.view.drain(..written.min(self.view.len()));
        self.viewed = len.saturating_sub(written);
    }
}
