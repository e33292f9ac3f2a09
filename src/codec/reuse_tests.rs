use proptest::prelude::*;

use super::*;
use crate::codec::{Encoder, Encoding};

/// The guided streams decoded by zlib-rs (flate2's reader), not by our own inflater: a fault the two of ours
/// shared would not show otherwise.
fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz), &mut out).expect("a valid gzip stream");
    out
}

/// A greedy LZ77 parse of `text` (what a decoder would report for a stream coded that way): the
/// longest earlier repeat of at least three bytes within the window, by brute force over a small hash.
fn parse(text: &[u8]) -> Vec<Repeat> {
    let mut last: std::collections::HashMap<[u8; 3], Vec<usize>> = Default::default();
    let mut repeats = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let mut best = (0, 0);
        if pos + 3 <= text.len() {
            let key = [text[pos], text[pos + 1], text[pos + 2]];
            for &from in last.get(&key).into_iter().flatten().rev().take(16) {
                if pos - from > WINDOW as usize {
                    break;
                }
                let len = (0..258.min(text.len() - pos)).take_while(|&i| text[from + i] == text[pos + i]).count();
                if len > best.0 {
                    best = (len, pos - from);
                }
            }
        }
        let step = if best.0 >= 3 {
            repeats.push(Repeat { at: pos as u64, distance: best.1 as u16, length: best.0 as u16 });
            best.0
        } else {
            1
        };
        for at in pos..(pos + step).min(text.len().saturating_sub(2)) {
            last.entry([text[at], text[at + 1], text[at + 2]]).or_default().push(at);
        }
        pos += step;
    }
    repeats
}

/// An HTML-like page: a few fragments repeated with numbers, links to the upstream among them.
fn page() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop::sample::select(vec![
        "<a href=\"https://example.com/docs/",
        "\">link</a>",
        "<li class=\"item\">",
        "</li>\n",
        "<p>Some text about the proxy and its rules.</p>",
        "<div id=\"",
        "\"></div>",
        "https://example.com",
    ]);
    prop::collection::vec((fragment, 0..1000u32), 1..400)
        .prop_map(|parts| parts.into_iter().flat_map(|(text, n)| format!("{text}{n}").into_bytes()).collect())
}

/// `text` with each `(at, removed, inserted)` applied (positions in `text`, sorted, not overlapping);
/// also where each decoded position's byte went, for the chunking.
fn edit(text: &[u8], edits: &[(usize, usize, Vec<u8>)]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut moved = vec![0; text.len() + 1];
    let mut copied = 0;
    for (at, removed, inserted) in edits {
        for (i, &byte) in text.iter().enumerate().take(*at).skip(copied) {
            moved[i] = out.len();
            out.push(byte);
        }
        for slot in &mut moved[*at..at + removed] {
            *slot = out.len();
        }
        out.extend_from_slice(inserted);
        copied = at + removed;
    }
    for (i, &byte) in text.iter().enumerate().skip(copied) {
        moved[i] = out.len();
        out.push(byte);
    }
    moved[text.len()] = out.len();
    (out, moved)
}

fn edits(len: usize) -> impl Strategy<Value = Vec<(usize, usize, Vec<u8>)>> {
    prop::collection::vec((0..len.max(1), 0..40usize, prop::collection::vec(b'a'..=b'z', 0..60)), 0..20).prop_map(
        move |mut edits| {
            edits.sort_by_key(|e| e.0);
            let mut from = 0;
            edits.retain_mut(|(at, removed, _)| {
                if *at < from || *at > len {
                    return false;
                }
                *removed = (*removed).min(len - *at);
                from = *at + *removed;
                true
            });
            edits
        },
    )
}

/// Runs a body through [`Reuse`] in chunks, checking each call's hints against the rewritten bytes,
/// and encodes it guided; returns the hints and the compressed body.
fn run(decoded: &[u8], rewritten: &[u8], moved: &[usize], cuts: &[usize]) -> (Vec<Hint>, Vec<u8>) {
    run_with(decoded, parse(decoded), rewritten, moved, cuts)
}

fn run_with(
    decoded: &[u8],
    mut repeats: Vec<Repeat>,
    rewritten: &[u8],
    moved: &[usize],
    cuts: &[usize],
) -> (Vec<Hint>, Vec<u8>) {
    let mut reuse = Reuse::new();
    let mut encoder = Encoder::new(Encoding::Gzip);
    let (mut out, mut all, mut hints) = (Vec::new(), Vec::new(), Vec::new());
    let (mut d, mut r) = (0, 0);
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(decoded.len())).collect();
    cuts.sort_unstable();
    cuts.push(decoded.len());
    for &cut in &cuts {
        let cut = cut.max(d);
        let mut mine: Vec<Repeat> = repeats.iter().copied().filter(|r| r.at < cut as u64).collect();
        repeats.retain(|r| r.at >= cut as u64);
        reuse.add_repeats(&mut mine);
        let r_end = if cut == decoded.len() { rewritten.len() } else { moved[cut] };
        reuse.guide(&decoded[d..cut], &rewritten[r..r_end], &mut hints);
        for hint in &hints {
            let (at, len) = (hint.at as usize, hint.len as usize);
            assert!(at >= r && at + len <= r_end, "hint {hint:?} outside this call's bytes {r}..{r_end}");
            if let Some(previous) = all.last() {
                let previous: &Hint = previous;
                assert!(at >= previous.at as usize + previous.len as usize, "{hint:?} overlaps {previous:?}");
            }
            if hint.distance > 0 {
                let from = at - hint.distance as usize;
                assert!((0..len).all(|i| rewritten[at + i] == rewritten[from + i]), "{hint:?} does not hold");
            }
            all.push(*hint);
        }
        encoder.encode_guided(&rewritten[r..r_end], &hints, &mut out).unwrap();
        (d, r) = (cut, r_end);
    }
    encoder.finish(&mut out).unwrap();
    (all, out)
}

/// Bytes of a body of `len` that the hints do not leave to the encoder's own search.
fn not_searched(len: usize, hints: &[Hint]) -> usize {
    len - hints.iter().filter(|h| h.distance == 0).map(|h| h.len as usize).sum::<usize>()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn hints_hold_and_the_guided_stream_decodes_to_the_rewritten_body(
        (decoded, edits) in page().prop_flat_map(|page| { let len = page.len(); (Just(page), edits(len)) }),
        cuts in prop::collection::vec(0..20_000usize, 0..8),
    ) {
        let (rewritten, moved) = edit(&decoded, &edits);
        let (_, gz) = run(&decoded, &rewritten, &moved, &cuts);
        prop_assert_eq!(gunzip(&gz), rewritten);
    }

    #[test]
    fn an_unchanged_body_is_coded_as_parsed(decoded in page(), cuts in prop::collection::vec(0..20_000usize, 0..8)) {
        let moved: Vec<usize> = (0..=decoded.len()).collect();
        let (hints, gz) = run(&decoded, &decoded, &moved, &[]);
        prop_assert_eq!(not_searched(decoded.len(), &hints), decoded.len());
        let matches: Vec<(u64, u32, u32)> =
            hints.iter().filter(|h| h.distance > 0).map(|h| (h.at, h.len, h.distance)).collect();
        let parsed: Vec<(u64, u32, u32)> =
            parse(&decoded).iter().map(|r| (r.at, u32::from(r.length), u32::from(r.distance))).collect();
        prop_assert_eq!(matches, parsed);
        prop_assert_eq!(gunzip(&gz), decoded.clone());
        // In chunks, only a repeat cut by a chunk's end loses its rest to the encoder's own search.
        let (hints, gz) = run(&decoded, &decoded, &moved, &cuts);
        prop_assert!(not_searched(decoded.len(), &hints) + 258 * cuts.len() >= decoded.len());
        prop_assert_eq!(gunzip(&gz), decoded);
    }
}

#[test]
fn links_swapped_on_every_line_keep_nearly_all_of_the_parse() {
    let decoded: Vec<u8> = (0..2000)
        .flat_map(|i| {
            format!("<li><a href=\"https://example.com/docs/page-{}.html\">Page {i}</a></li>\n", i % 97).into_bytes()
        })
        .collect();
    let text = String::from_utf8(decoded.clone()).unwrap();
    let rewritten = text.replace("https://example.com", "http://localhost:3000").into_bytes();
    let mut edits = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("https://example.com") {
        edits.push((from + found, 19, b"http://localhost:3000".to_vec()));
        from += found + 19;
    }
    let (check, moved) = edit(&decoded, &edits);
    assert_eq!(check, rewritten);
    // The upstream's own parse, gzip -6, as our inflater reports it.
    let level_6 = |text: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        std::io::Write::write_all(&mut gz, text).unwrap();
        gz.finish().unwrap()
    };
    let upstream = level_6(&decoded);
    let (mut inflated, mut repeats) = (Vec::new(), Vec::new());
    let mut inflate = crate::codec::Inflate::gzip();
    let mut rest = &upstream[..];
    while !rest.is_empty() || inflated.len() < decoded.len() {
        rest = &rest[inflate.decode(rest, &mut inflated, 1 << 20, &mut repeats).unwrap()..];
    }
    assert_eq!(inflated, decoded);
    let (hints, guided) = run_with(&decoded, repeats, &rewritten, &moved, &[10_000, 50_000, 90_000]);
    assert_eq!(gunzip(&guided), rewritten);
    // What the edits wrote is the encoder's to search (`://localhost:3000` after the shared `http`).
    let written = 17 * edits.len();
    let share = not_searched(rewritten.len(), &hints) as f64 / (rewritten.len() - written) as f64;
    assert!(share > 0.99, "hints guide {share:.3} of the bytes the edits left");
    let plain = crate::codec::encode_all(Encoding::Gzip, &rewritten);
    let best = level_6(&rewritten).len();
    assert!(guided.len() < plain.len(), "guided {} bytes, own search {}", guided.len(), plain.len());
    assert!(guided.len() * 100 <= best * 105, "guided {} bytes, gzip -6 {best}", guided.len());
}

#[test]
fn a_body_rewritten_everywhere_is_given_up() {
    let decoded = b"<b>word</b> ".repeat(4000);
    let rewritten = String::from_utf8(decoded.clone()).unwrap().replace("word", "other").into_bytes();
    let mut reuse = Reuse::new();
    let mut hints = Vec::new();
    reuse.guide(&decoded, &rewritten, &mut hints);
    assert!(!reuse.is_on(), "an edit every 12 bytes is not worth lining up");
    let mut repeats = vec![Repeat { at: 0, distance: 1, length: 3 }];
    reuse.add_repeats(&mut repeats);
    assert!(repeats.is_empty() && reuse.repeats.is_empty(), "repeats are dropped once given up");
}

#[test]
fn anchors_and_shared_ends_are_found_exactly() {
    assert_eq!(common_suffix(b"xxhttp://a.test/page", b"//b.test/page"), 10);
    assert_eq!(common_suffix(b"same bytes, longer than eight", b"bytes, longer than eight"), 24);
    assert_eq!(common_suffix(b"", b"abc"), 0);
    let hay = b"//127.0.0.1:3000/img/1.jpg 480w, //127.0.0.1:3000/img/2.jpg";
    assert_eq!(find_anchor(hay, b"/img/2.j"), Some(49));
    assert_eq!(find_anchor(hay, b"/img/3.j"), None);
    assert_eq!(find_anchor(b"short", b"12345678"), None);
    // The first byte repeats often; only the whole anchor counts.
    assert_eq!(find_anchor(b"////////a///////b", b"///////b"), Some(9));
    // A link's scheme dropped and its port swapped: the sides meet at `//` (`http:` removed), then
    // after the port.
    let decoded = b"http://127.0.0.1:8080/assets/app.js\" defer></script>";
    let rewritten = b"//127.0.0.1:3000/assets/app.js\" defer></script>";
    assert_eq!(meet_again(decoded, rewritten), Some((5, 0)));
    assert_eq!(meet_again(&decoded[17..], &rewritten[12..]), Some((3, 3)));
}
