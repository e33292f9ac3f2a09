//! Where JavaScript and the engine read a repetition differently: the [`Shape`] of a parsed piece and the
//! check that rejects the repetitions whose matches or group values would differ.

use super::parser::{unsupported, Parser};
use crate::error::JsRegexError;

/// What the repetition checks need to know about a parsed piece.
///
/// JavaScript and the engine repeat differently: JS refuses an optional iteration that matches empty (and
/// backtracks into the other ways the body could match), and clears the groups inside the body at every
/// iteration; the engine accepts one empty iteration and keeps group values from earlier iterations. These
/// fields say when that can change a result.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    /// Can match the empty string.
    nullable: bool,
    /// Can match a non-empty string.
    consumes: bool,
    /// No way of matching empty is preferred over a way of matching non-empty, so an empty match is only
    /// taken when nothing else fits.
    empty_last: bool,
    /// Contains an assertion (whose empty matches may or may not succeed).
    assertion: bool,
    /// Contains a capture group.
    pub(super) captures: bool,
    /// Contains a capture group that a match of the piece can leave unset.
    skippable_captures: bool,
}

impl Shape {
    /// One character.
    pub(super) const CHAR: Shape = Shape {
        nullable: false,
        consumes: true,
        empty_last: true,
        assertion: false,
        captures: false,
        skippable_captures: false,
    };
    /// Nothing.
    pub(super) const EMPTY: Shape = Shape { nullable: true, consumes: false, ..Shape::CHAR };
    /// `^`, `$`, `\b`, `\B`.
    pub(super) const ASSERTION: Shape = Shape { assertion: true, ..Shape::EMPTY };

    /// `self` followed by `next`.
    pub(super) fn then(self, next: Shape) -> Shape {
        Shape {
            nullable: self.nullable && next.nullable,
            consumes: self.consumes || next.consumes,
            // Two empty ways through `self` that differ in an assertion could put an empty match ahead of a
            // longer one through `next`.
            empty_last: !(self.nullable && next.nullable)
                || (self.empty_last && next.empty_last && !(self.assertion && next.consumes)),
            assertion: self.assertion || next.assertion,
            captures: self.captures || next.captures,
            skippable_captures: self.skippable_captures || next.skippable_captures,
        }
    }

    /// `self` as the earlier alternative, `next` as the later one.
    pub(super) fn or(self, next: Shape) -> Shape {
        Shape {
            nullable: self.nullable || next.nullable,
            consumes: self.consumes || next.consumes,
            empty_last: self.empty_last && next.empty_last && !(self.nullable && next.consumes),
            assertion: self.assertion || next.assertion,
            captures: self.captures || next.captures,
            // Taking one alternative skips the groups of the other.
            skippable_captures: self.captures || next.captures,
        }
    }

    /// `self` repeated `min..=max` times (`None`: unbounded).
    pub(super) fn repeat(self, min: u64, max: Option<u64>, lazy: bool) -> Shape {
        let nullable = self.nullable || min == 0;
        let empty_last = if !nullable {
            true
        } else if lazy {
            // Lazy prefers fewer iterations: stopping early is preferred.
            !self.consumes || max == Some(0)
        } else {
            self.empty_last && !(self.nullable && self.assertion)
        };
        Shape {
            nullable,
            consumes: self.consumes && max != Some(0),
            empty_last,
            assertion: self.assertion,
            captures: self.captures,
            skippable_captures: self.skippable_captures || (min == 0 && self.captures),
        }
    }
}

impl Parser<'_> {
    /// Rejects repetitions where JavaScript's iteration rules (see [`Shape`]) would give a different match or
    /// different group values.
    pub(super) fn check_repetition(
        &self,
        atom_start: usize,
        shape: Shape,
        min: u64,
        max: Option<u64>,
    ) -> Result<(), JsRegexError> {
        let optional_iterations = max.is_none_or(|max| max > min);
        if optional_iterations && shape.nullable && !shape.empty_last {
            return Err(unsupported(
                "repetition of something that prefers to match empty",
                atom_start,
                " (JavaScript skips empty iterations; the engine takes them)",
            ));
        }
        // An unbounded loop drops a repeated empty iteration like JS does, so only bounded ones can overwrite
        // a group with an empty match.
        let repeats = max.is_none_or(|max| max > 1);
        let bounded_empty = shape.nullable && max.is_some_and(|max| max > min);
        if shape.captures && repeats && (shape.skippable_captures || bounded_empty) {
            return Err(unsupported(
                "capture group in a repetition that can skip it or match empty",
                atom_start,
                " (JavaScript resets the group on every iteration; the engine keeps earlier values)",
            ));
        }
        Ok(())
    }
}
