//! Negotiation: the codings we speak, what a client's `Accept-Encoding` allows, what we ask the
//! upstream for, and which coding a rewritten body goes out in. Kept apart from the decoders and
//! encoders because it is pure header logic, with its own trade-off (the preference order).

/// A content coding we can decode and encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// No coding: bytes pass as they are.
    Identity,
    /// `gzip` (and `x-gzip`): DEFLATE with a CRC-32 trailer.
    Gzip,
    /// `deflate`, which HTTP means as zlib-wrapped DEFLATE.
    Deflate,
    /// `br`.
    Brotli,
    /// `zstd`.
    Zstd,
}

impl Encoding {
    /// A `Content-Encoding` value we can decode; `None` for anything else (stacked codings included).
    pub fn from_content_encoding(value: Option<&str>) -> Option<Encoding> {
        let Some(value) = value else { return Some(Encoding::Identity) };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Encoding::Identity),
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" => Some(Encoding::Brotli),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    /// The coding's name in `Content-Encoding` and `Accept-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
            Encoding::Brotli => "br",
            Encoding::Zstd => "zstd",
        }
    }

    /// Our preference when we pick the coding: the cheapest first, since on a dev machine CPU costs
    /// more than bytes (timings: benches/RESULTS.md, "Module notes"); deflate is gzip's DEFLATE with
    /// a scalar Adler-32 in place of a carry-less-multiply CRC.
    const PREFERENCE: [Encoding; 4] = [Encoding::Gzip, Encoding::Deflate, Encoding::Zstd, Encoding::Brotli];
}

/// The codings of a client's `Accept-Encoding` that we also speak, with q > 0, in the client's order.
pub(crate) fn accepted(accept_encoding: Option<&str>) -> Vec<Encoding> {
    let Some(header) = accept_encoding else { return Vec::new() };
    let mut accepted = Vec::new();
    for item in header.split(',') {
        let mut params = item.split(';');
        let name = params.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .filter_map(|q| q.trim().parse::<f32>().ok())
            .next_back()
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let encoding = match name.as_str() {
            "gzip" | "x-gzip" => Encoding::Gzip,
            "deflate" => Encoding::Deflate,
            "br" => Encoding::Brotli,
            "zstd" => Encoding::Zstd,
            _ => continue,
        };
        if !accepted.contains(&encoding) {
            accepted.push(encoding);
        }
    }
    accepted
}

/// The `Accept-Encoding` to send upstream: the client's, limited to codings we can decode.
pub(crate) fn upstream_accept_encoding(accept_encoding: Option<&str>) -> Option<String> {
    let tokens: Vec<&str> = accepted(accept_encoding).into_iter().map(Encoding::token).collect();
    (!tokens.is_empty()).then(|| tokens.join(", "))
}

/// How to re-encode a rewritten body: the upstream's coding if the client takes it (the client asked
/// for it in the first place), else our preferred one among the client's, else identity. An
/// uncompressed body stays so unless `compress_identity` (we asked for it uncompressed ourselves).
pub(crate) fn choose_output(upstream: Encoding, client_accepts: &[Encoding], compress_identity: bool) -> Encoding {
    if upstream == Encoding::Identity && !compress_identity {
        return Encoding::Identity;
    }
    if upstream != Encoding::Identity && client_accepts.contains(&upstream) {
        return upstream;
    }
    Encoding::PREFERENCE.into_iter().find(|e| client_accepts.contains(e)).unwrap_or(Encoding::Identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_accept_encoding() {
        assert_eq!(accepted(Some("gzip, deflate, br")), vec![Encoding::Gzip, Encoding::Deflate, Encoding::Brotli]);
        assert_eq!(accepted(Some("br;q=0, gzip;q=0.5, compress")), vec![Encoding::Gzip]);
        assert_eq!(upstream_accept_encoding(Some("sdch, identity")), None);
        let (gzip, br) = (Encoding::Gzip, Encoding::Brotli);
        assert_eq!(choose_output(Encoding::Gzip, &[br, gzip], false), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Zstd, &[br, gzip], false), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Zstd, &[br], false), Encoding::Brotli);
        assert_eq!(choose_output(Encoding::Brotli, &[], false), Encoding::Identity);
        // Uncompressed from the upstream: compressed here only if the proxy asked for it so.
        assert_eq!(choose_output(Encoding::Identity, &[br, gzip], false), Encoding::Identity);
        assert_eq!(choose_output(Encoding::Identity, &[br, gzip], true), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Identity, &[Encoding::Zstd, gzip], true), Encoding::Gzip);
        assert_eq!(choose_output(Encoding::Identity, &[br, Encoding::Zstd], true), Encoding::Zstd);
        assert_eq!(choose_output(Encoding::Identity, &[], true), Encoding::Identity);
        assert_eq!(Encoding::from_content_encoding(Some("gzip, br")), None);
    }
}
