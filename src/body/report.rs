//! What a body says about itself once it has ended: the exchange record's body fields (bytes, times,
//! rules matched, the start of the body before and after the rules).

use std::time::Duration;

use serde::Serialize;

/// How much of a body the inspector's preview keeps, before and after rewriting.
pub const PREVIEW_BYTES: usize = 1024;

/// What a body knows about itself once it has ended: the exchange record's body fields.
#[derive(Debug, Default)]
pub(crate) struct BodyReport {
    /// Bytes read from the upstream or file (`None`: the body was in memory).
    pub bytes_in: Option<u64>,
    /// Time in the rules and in the encoder (`None`: no pipeline).
    pub times: Option<(Duration, Duration)>,
    /// Rules that matched, with their counts.
    pub rules: Vec<RuleMatches>,
    pub preview: Option<Preview>,
}

/// The start of a rewritten body, before and after the rules ran.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Preview {
    /// Up to 1 KiB of the decoded upstream body.
    pub before: String,
    /// Up to 1 KiB of the rewritten body, before encoding.
    pub after: String,
}

/// How often one rule matched in one body.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleMatches {
    /// The rule as the user wrote it (its pattern, `/x/g` or `"text"`), or `snippet` / `link rewrite`
    /// for the built-in ones.
    pub rule: String,
    /// Matches replaced in this body.
    pub matches: u64,
}

/// The start of a rewritten body while it is being kept (bytes: a character cut at the limit or at a
/// chunk edge is mended once, when the body ends).
#[derive(Debug, Default)]
pub struct PreviewBuffer {
    before: Vec<u8>,
    after: Vec<u8>,
}

impl PreviewBuffer {
    /// Keeps what still fits of one chunk before and after the rules.
    pub(crate) fn keep(&mut self, before: &[u8], after: &[u8]) {
        for (kept, chunk) in [(&mut self.before, before), (&mut self.after, after)] {
            let room = PREVIEW_BYTES.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    pub(crate) fn into_preview(self) -> Preview {
        Preview {
            before: String::from_utf8_lossy(&self.before).into_owned(),
            after: String::from_utf8_lossy(&self.after).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Pipeline;
    use crate::codec::Encoding;
    use crate::rewrite::{Rewriter, Rule, RuleReplacement};

    #[test]
    fn the_preview_keeps_the_first_kib_before_and_after_the_rules_across_chunks() {
        let rule = Rule::regex("a", "g", RuleReplacement::Text("bb".into())).unwrap();
        let mut pipeline =
            Pipeline::new(Encoding::Identity, Encoding::Identity, Rewriter::new(&[rule], "h", 1024)).keep_preview();
        let input: Vec<u8> = b"xa".iter().copied().cycle().take(3000).collect();
        let mut out = Vec::new();
        for chunk in input.chunks(700) {
            pipeline.push(chunk, &mut out).unwrap();
        }
        pipeline.finish(&mut out).unwrap();
        let preview = pipeline.take_preview().expect("kept");
        assert_eq!(preview.before.as_bytes(), &input[..PREVIEW_BYTES]);
        assert_eq!(preview.after.as_bytes(), &out[..PREVIEW_BYTES]);
        assert!(pipeline.take_preview().is_none(), "taken once");
        let mut plain = Pipeline::new(Encoding::Identity, Encoding::Identity, Rewriter::new(&[], "h", 1024));
        plain.push(b"abc", &mut Vec::new()).unwrap();
        assert!(plain.take_preview().is_none(), "nothing kept unless asked");
    }

    #[test]
    fn a_cut_character_is_mended_once() {
        let mut buffer = PreviewBuffer::default();
        let text = "é".repeat(PREVIEW_BYTES);
        let (first, rest) = text.as_bytes().split_at(1);
        buffer.keep(first, first);
        buffer.keep(rest, rest);
        let preview = buffer.into_preview();
        assert_eq!(preview.before, "é".repeat(PREVIEW_BYTES / 2));
        assert_eq!(preview.after.len(), PREVIEW_BYTES);
    }
}
