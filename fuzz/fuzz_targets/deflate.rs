//! Differential fuzzing of our DEFLATE encoder against zlib's own inflate (the C library, through
//! libz-sys): any body, cut into pieces with sync flushes between some of them, in gzip or zlib
//! framing, must inflate to itself with its checksum verified. A corrupt stream in production would
//! be silent, so zlib, not our decoder, is the judge. Run: `cargo fuzz run deflate` (nightly).
#![no_main]

use std::os::raw::c_int;

use devproxy_native::codec::{Encoder, Encoding};
use libfuzzer_sys::fuzz_target;
use libz_sys as z;

/// Inflates a whole gzip or zlib stream (header detected) with zlib; `None` if zlib rejects it.
fn zlib_inflate(compressed: &[u8], expected_len: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; expected_len + 1];
    // SAFETY: zlib takes a zeroed z_stream (null allocators mean its own) through a raw pointer;
    // inflateInit2_ fills in the allocators, so the stream is a valid value once it returns Z_OK. The
    // input and output pointers stay valid for the calls, and inflateEnd frees what zlib took.
    unsafe {
        let mut uninit = std::mem::MaybeUninit::<z::z_stream>::zeroed();
        let init = z::inflateInit2_(
            uninit.as_mut_ptr(),
            15 + 32,
            z::zlibVersion(),
            std::mem::size_of::<z::z_stream>() as c_int,
        );
        assert_eq!(init, z::Z_OK);
        // In place: zlib keeps a pointer back to the stream it was given.
        let stream = uninit.assume_init_mut();
        stream.next_in = compressed.as_ptr() as *mut u8;
        stream.avail_in = compressed.len() as u32;
        stream.next_out = out.as_mut_ptr();
        stream.avail_out = out.len() as u32;
        let status = z::inflate(stream, z::Z_FINISH);
        let (produced, left) = (stream.total_out as usize, stream.avail_in);
        z::inflateEnd(stream);
        (status == z::Z_STREAM_END && left == 0).then(|| {
            out.truncate(produced);
            out
        })
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let encoding = if data[0] & 1 == 0 { Encoding::Gzip } else { Encoding::Deflate };
    let step = 1 + usize::from(data[1]) * 97;
    let flush_every = usize::from(data[2] % 4);
    // Short inputs repeated make long ones: runs, window-edge distances and full blocks.
    let repeat = if data[0] & 2 == 0 { 1 } else { 1 + usize::from(data[0] >> 2) * 256 };
    let mut body = data[3..].repeat(repeat);
    body.truncate(512 * 1024);
    let mut encoder = Encoder::new(encoding);
    let mut out = Vec::new();
    for (i, piece) in body.chunks(step).enumerate() {
        encoder.encode(piece, &mut out).expect("in memory");
        if flush_every > 0 && i % flush_every == 0 {
            encoder.flush(&mut out).expect("in memory");
        }
    }
    encoder.finish(&mut out).expect("in memory");
    let inflated = zlib_inflate(&out, body.len()).expect("zlib rejected our stream");
    assert!(inflated == body, "zlib inflated {} bytes, not the {} we compressed", inflated.len(), body.len());
});
