//! Tests across decoders and encoders: every coding round-trips, decoded in bounded pieces.

use super::*;

const ALL: [Encoding; 5] = [Encoding::Identity, Encoding::Gzip, Encoding::Deflate, Encoding::Brotli, Encoding::Zstd];

#[test]
fn round_trips_in_bounded_pieces() {
    let body: Vec<u8> = (0..300_000u32).flat_map(|i| format!("<a href='/p/{i}'>x</a>").into_bytes()).collect();
    for encoding in ALL {
        let compressed = encode_all(encoding, &body);
        let mut decoder = Decoder::new(encoding);
        let mut decoded = Vec::new();
        for chunk in compressed.chunks(1000) {
            let mut chunk = chunk;
            loop {
                let mut piece = Vec::new();
                let consumed = decoder.decode(chunk, &mut piece).unwrap();
                assert!(piece.len() <= DECODED_PIECE, "{encoding:?} produced {}", piece.len());
                chunk = &chunk[consumed..];
                let full = piece.len() == DECODED_PIECE;
                decoded.extend_from_slice(&piece);
                if chunk.is_empty() && !full {
                    break;
                }
            }
        }
        decoder.finish().unwrap();
        assert_eq!(decoded, body, "{encoding:?}");
    }
}
