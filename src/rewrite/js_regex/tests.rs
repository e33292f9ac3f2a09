//! The translator's tests: matches compared with what Node 20 yields, the emitted patterns, and the errors
//! for what JavaScript rejects or the engine cannot run.

use super::classes::NEVER;
use super::parser::{JsFlags, ENGINE_HINT};
use super::*;
use crate::error::JsRegexError;
use crate::rewrite::lines;
use regex_automata::meta::Regex;
use regex_automata::util::primitives::PatternID;
use regex_automata::Input;

type Groups<'a> = &'a [Option<&'a str>];

/// (source, flags, haystack, number of capture groups, every match JS's `matchAll` yields: the whole match,
/// then each group). Expectations came from Node 20: `[...hay.matchAll(new RegExp(src, flags + "g"))]`.
#[rustfmt::skip]
const MATCH_CASES: &[(&str, &str, &str, usize, &[Groups])] = &[
(r"\n\r\t\v\f", "", "x\u{a}\u{d}\u{9}\u{b}\u{c}y", 0, &[&[Some("\u{a}\u{d}\u{9}\u{b}\u{c}")]]),
(r"a\0b", "", "a\u{0}b a0b", 0, &[&[Some("a\u{0}b")]]),
(r"\0", "u", "\u{0}", 0, &[&[Some("\u{0}")]]),
(r"\cA\cz\cJ", "", "\u{1}\u{1a}\u{a}", 0, &[&[Some("\u{1}\u{1a}\u{a}")]]),
(r"\x41\x7e\xe9", "", r"A~é", 0, &[&[Some(r"A~é")]]),
(r"\u00e9\u0041", "", r"caféA", 0, &[&[Some(r"éA")]]),
(r"\uD83D\uDE00", "", r"x😀y", 0, &[&[Some(r"😀")]]),
(r"\uD83D\uDE00", "u", r"x😀y", 0, &[&[Some(r"😀")]]),
(r"\u{1F600}+", "u", r"😀😀!", 0, &[&[Some(r"😀😀")]]),
(r"\u{41}", "u", r"A", 0, &[&[Some(r"A")]]),
(r"\u{2}", "", r"uuu u", 0, &[&[Some(r"uu")]]),
(r"\x4", "", r"x4", 0, &[&[Some(r"x4")]]),
(r"\u12", "", r"u12", 0, &[&[Some(r"u12")]]),
(r"a\/b", "", r"a/b", 0, &[&[Some(r"a/b")]]),
(r"\^\$\.\*\+\?\(\)\[\]\{\}\|\\", "", r"x^$.*+?()[]{}|\y", 0, &[&[Some(r"^$.*+?()[]{}|\")]]),
(r"\^\$\.\*\+\?\(\)\[\]\{\}\|\/", "u", r"^$.*+?()[]{}|/", 0, &[&[Some(r"^$.*+?()[]{}|/")]]),
(r"\a\e\q\-\_", "", r"aeq-_", 0, &[&[Some(r"aeq-_")]]),
(r"\101\12\0101", "", "A\u{a}\u{8}1", 0, &[&[Some("A\u{a}\u{8}1")]]),
(r"\400", "", r" 0", 0, &[&[Some(r" 0")]]),
(r"\08", "", "\u{0}8", 0, &[&[Some("\u{0}8")]]),
(r"\8\9", "", r"89", 0, &[&[Some(r"89")]]),
(r"(a)\2", "", "a\u{2}", 1, &[&[Some("a\u{2}"), Some(r"a")]]),
(r"(a)\10", "", "a\u{8}", 1, &[&[Some("a\u{8}"), Some(r"a")]]),
(r"\c1", "", r"\c1", 0, &[&[Some(r"\c1")]]),
(r"\c", "", r"\c", 0, &[&[Some(r"\c")]]),
(r"\k", "", r"k", 0, &[&[Some(r"k")]]),
(r"\k<x>", "", r"k<x>", 0, &[&[Some(r"k<x>")]]),
(r"\p{L}", "", r"p{L}", 0, &[&[Some(r"p{L}")]]),
(r"\d+", "", r"a123٣b", 0, &[&[Some(r"123")]]),
(r"\D+", "", r"12ab٣3", 0, &[&[Some(r"ab٣")]]),
(r"\w+", "", r"ab_9 é", 0, &[&[Some(r"ab_9")]]),
(r"\W+", "", r"ab é!c", 0, &[&[Some(r" é!")]]),
(r"\s+", "", "a \u{9}\u{a}\u{b}\u{c}\u{d}\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}b\u{85}c\u{200b}d", 0, &[&[Some(" \u{9}\u{a}\u{b}\u{c}\u{d}\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}")]]),
(r"\S+", "", "ab\u{feff}c\u{85}d", 0, &[&[Some(r"ab")], &[Some("c\u{85}d")]]),
(r"[abc]+", "", r"xabcay", 0, &[&[Some(r"abca")]]),
(r"[^abc]+", "", r"abxyzc", 0, &[&[Some(r"xyz")]]),
(r"[a-c0-2]+", "", r"zab12d", 0, &[&[Some(r"ab12")]]),
(r"[\d_]+", "", r"x1_2y", 0, &[&[Some(r"1_2")]]),
(r"[\w-]+", "", r"a-b c", 0, &[&[Some(r"a-b")], &[Some(r"c")]]),
(r"[\s]", "", "a\u{feff}b", 0, &[&[Some("\u{feff}")]]),
(r"[\D]", "", r"1a", 0, &[&[Some(r"a")]]),
(r"[\W\d]+", "", r"ab 1!c", 0, &[&[Some(r" 1!")]]),
(r"[\b]", "", "a\u{8}b", 0, &[&[Some("\u{8}")]]),
(r"[\-a]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
(r"[-a]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
(r"[a-]+", "", r"x-a-", 0, &[&[Some(r"-a-")]]),
(r"[a-c-e]+", "", r"xb-ed", 0, &[&[Some(r"b-e")]]),
(r"[^]", "", "a\u{a}b", 0, &[&[Some(r"a")], &[Some("\u{a}")], &[Some(r"b")]]),
(r"[^]+", "s", "a\u{a}\u{2028}b", 0, &[&[Some("a\u{a}\u{2028}b")]]),
(r"[]", "", r"abc", 0, &[]),
(r"a[]", "", r"a", 0, &[]),
(r"[^]*", "", r"", 0, &[&[Some(r"")]]),
(r"[]]", "", r"]", 0, &[]),
(r"[\]]", "", r"]", 0, &[&[Some(r"]")]]),
(r"[[a]+", "", r"[a]", 0, &[&[Some(r"[a")]]),
(r"[&&~~-]+", "", r"a&&~~--b", 0, &[&[Some(r"&&~~--")]]),
(r"[a&&b]+", "", r"ab&", 0, &[&[Some(r"ab&")]]),
(r"[\d-a]+", "", r"5-a", 0, &[&[Some(r"5-a")]]),
(r"[a-\d]+", "", r"a-5b", 0, &[&[Some(r"a-5")]]),
(r"[\B\8]+", "", r"B8", 0, &[&[Some(r"B8")]]),
(r"[\1\12]+", "", "\u{1}\u{a}", 0, &[&[Some("\u{1}\u{a}")]]),
(r"[\c1\c_]+", "", "\u{11}\u{1f}", 0, &[&[Some("\u{11}\u{1f}")]]),
(r"[\c*]+", "", r"\c*", 0, &[&[Some(r"\c*")]]),
(r"[\x41-\x43]+", "", r"ABCD", 0, &[&[Some(r"ABC")]]),
(r"[\u00e0-\u00ff]+", "", r"aéÿ", 0, &[&[Some(r"éÿ")]]),
(r"[\u{1F600}-\u{1F64F}]+", "u", r"a😀😃b", 0, &[&[Some(r"😀😃")]]),
(r"[😀a]", "u", r"😀a", 0, &[&[Some(r"😀")], &[Some(r"a")]]),
(r"[\/]", "", r"/", 0, &[&[Some(r"/")]]),
(r".", "", "a\u{d}b\u{a}c\u{2028}d\u{2029}e\u{85}", 0, &[&[Some(r"a")], &[Some(r"b")], &[Some(r"c")], &[Some(r"d")], &[Some(r"e")], &[Some("\u{85}")]]),
(r".", "s", "a\u{d}\u{a}\u{2028}", 0, &[&[Some(r"a")], &[Some("\u{d}")], &[Some("\u{a}")], &[Some("\u{2028}")]]),
(r"a.c", "", "abc a\u{a}c a\u{d}c", 0, &[&[Some(r"abc")]]),
(r".+", "u", r"😀x", 0, &[&[Some(r"😀x")]]),
(r"\b\w+\b", "", r"café au lait", 0, &[&[Some(r"caf")], &[Some(r"au")], &[Some(r"lait")]]),
(r"\bé", "", r"é xé", 0, &[&[Some(r"é")]]),
(r"\B", "", r"ab cd é", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")], &[Some(r"")]]),
(r"a\B", "", r"ab a aé", 0, &[&[Some(r"a")]]),
(r"^a", "", "a\u{a}a", 0, &[&[Some(r"a")]]),
(r"^a", "m", "a\u{a}a", 0, &[&[Some(r"a")], &[Some(r"a")]]),
(r"a$", "", "a\u{a}a", 0, &[&[Some(r"a")]]),
(r"a$", "m", "a\u{a}a", 0, &[&[Some(r"a")], &[Some(r"a")]]),
(r"a$", "", "a\u{a}", 0, &[]),
(r"a$", "m", "a\u{a}", 0, &[&[Some(r"a")]]),
(r"^\w$", "m", "a\u{a}b\u{a}", 0, &[&[Some(r"a")], &[Some(r"b")]]),
(r"^$", "", r"", 0, &[&[Some(r"")]]),
(r"^b", "m", "a\u{d}b", 0, &[&[Some(r"b")]]),
(r"a$", "m", "a\u{d}\u{a}b", 0, &[&[Some(r"a")]]),
(r"^b", "m", "a\u{d}\u{a}b", 0, &[&[Some(r"b")]]),
(r"^\w*", "m", "a\u{d}\u{a}b\u{d}c\u{2028}d\u{2029}e", 0, &[&[Some("a")], &[Some("")], &[Some("b")], &[Some("c")], &[Some("d")], &[Some("e")]]),
(r"\w*$", "m", "a\u{d}\u{a}b\u{d}c\u{2028}d\u{2029}e", 0, &[&[Some("a")], &[Some("")], &[Some("")], &[Some("b")], &[Some("")], &[Some("c")], &[Some("")], &[Some("d")], &[Some("")], &[Some("e")], &[Some("")]]),
(r"^$", "m", "\u{d}\u{a}\u{d}\u{a}\u{2028}\u{2029}\u{a}\u{d}", 0, &[&[Some("")], &[Some("")], &[Some("")], &[Some("")], &[Some("")], &[Some("")], &[Some("")], &[Some("")], &[Some("")]]),
(r"^.", "m", "ab\u{d}\u{a}cd\u{2028}ef\u{2029}gh", 0, &[&[Some("a")], &[Some("c")], &[Some("e")], &[Some("g")]]),
(r".$", "m", "ab\u{d}\u{a}cd\u{2028}ef\u{2029}gh", 0, &[&[Some("b")], &[Some("d")], &[Some("f")], &[Some("h")]]),
(r"\r^\n", "m", "a\u{d}\u{a}b", 0, &[&[Some("\u{d}\u{a}")]]),
(r"\r$\n", "m", "a\u{d}\u{a}b", 0, &[&[Some("\u{d}\u{a}")]]),
(r"\u2028^", "m", "a\u{2028}b", 0, &[&[Some("\u{2028}")]]),
(r"$\u2029", "m", "a\u{2029}b", 0, &[&[Some("\u{2029}")]]),
(r"[\s\S]$", "m", "ab\u{2028}\u{d}\u{a}", 0, &[&[Some("b")], &[Some("\u{2028}")], &[Some("\u{d}")], &[Some("\u{a}")]]),
(r"^[\s\S]", "m", "ab\u{2028}\u{d}\u{a}c", 0, &[&[Some("a")], &[Some("\u{d}")], &[Some("\u{a}")], &[Some("c")]]),
(r"(^|b)(\r?)$", "m", "ab\u{d}\u{a}\u{d}b", 2, &[&[Some("b\u{d}"), Some("b"), Some("\u{d}")], &[Some(""), Some(""), Some("")], &[Some(""), Some(""), Some("")], &[Some("b"), Some("b"), Some("")]]),
(r"^[^\r]", "mu", "\u{d}\u{2028}x\u{2029}\u{1f600}", 0, &[&[Some("\u{2028}")], &[Some("x")], &[Some("\u{1f600}")]]),
(r"\u2028|\r", "g", "a\u{2028}\u{d}\u{2029}", 0, &[&[Some("\u{2028}")], &[Some("\u{d}")]]),
(r"[\u2028\r]+", "m", "a\u{2028}\u{d}\u{2029}\u{d}", 0, &[&[Some("\u{2028}\u{d}")], &[Some("\u{d}")]]),
(r"^\u2028$", "m", "\u{2028}\u{2028}", 0, &[&[Some("\u{2028}")], &[Some("\u{2028}")]]),
(r"abc", "i", r"ABC aBc abd", 0, &[&[Some(r"ABC")], &[Some(r"aBc")]]),
(r"é", "i", r"É é e", 0, &[&[Some(r"É")], &[Some(r"é")]]),
(r"É", "i", r"é", 0, &[&[Some(r"é")]]),
(r"s", "i", "sS\u{17f}", 0, &[&[Some(r"s")], &[Some(r"S")]]),
("\u{17f}", "i", "sS\u{17f}", 0, &[&[Some("\u{17f}")]]),
("\u{17f}", "iu", "sS\u{17f}", 0, &[&[Some(r"s")], &[Some(r"S")], &[Some("\u{17f}")]]),
(r"k", "i", "kK\u{212a}", 0, &[&[Some(r"k")], &[Some(r"K")]]),
(r"k", "iu", "kK\u{212a}", 0, &[&[Some(r"k")], &[Some(r"K")], &[Some("\u{212a}")]]),
("\u{212a}", "i", "kK\u{212a}", 0, &[&[Some("\u{212a}")]]),
(r"ß", "i", "ß\u{1e9e}", 0, &[&[Some(r"ß")]]),
(r"ß", "iu", "ß\u{1e9e}", 0, &[&[Some(r"ß")], &[Some("\u{1e9e}")]]),
(r"σ", "i", r"σΣς", 0, &[&[Some(r"σ")], &[Some(r"Σ")], &[Some(r"ς")]]),
(r"ω", "i", "ωΩ\u{2126}", 0, &[&[Some(r"ω")], &[Some(r"Ω")]]),
(r"ω", "iu", "ωΩ\u{2126}", 0, &[&[Some(r"ω")], &[Some(r"Ω")], &[Some("\u{2126}")]]),
(r"𐐀", "i", r"𐐨𐐀", 0, &[&[Some(r"𐐀")]]),
(r"𐐀", "iu", r"𐐨𐐀", 0, &[&[Some(r"𐐨")], &[Some(r"𐐀")]]),
(r"[a-z]+", "i", r"1aBc2", 0, &[&[Some(r"aBc")]]),
(r"[^a-z]+", "i", r"aB1!c", 0, &[&[Some(r"1!")]]),
(r"[^a]", "i", r"aAb", 0, &[&[Some(r"b")]]),
(r"\w+", "i", "s\u{17f}K\u{212a}K_", 0, &[&[Some(r"s")], &[Some(r"K")], &[Some(r"K_")]]),
(r"\w+", "iu", "s\u{17f}K\u{212a}K_ é", 0, &[&[Some("s\u{17f}K\u{212a}K_")]]),
(r"\W", "iu", "s\u{17f}K\u{212a}K ", 0, &[&[Some(r" ")]]),
(r"[^\W]+", "iu", "s\u{17f}K\u{212a}K ", 0, &[&[Some("s\u{17f}K\u{212a}K")]]),
(r"\W", "i", "s\u{17f}K\u{212a}K ", 0, &[&[Some("\u{17f}")], &[Some("\u{212a}")], &[Some(r" ")]]),
(r"[\u00c0-\u00c5]+", "i", r"àÁâx", 0, &[&[Some(r"àÁâ")]]),
(r"\x41", "i", r"aA", 0, &[&[Some(r"a")], &[Some(r"A")]]),
(r"(?<year>\d{4})-(?<month>\d\d)", "", r"on 2024-05 and 1999-12", 2, &[&[Some(r"2024-05"), Some(r"2024"), Some(r"05")], &[Some(r"1999-12"), Some(r"1999"), Some(r"12")]]),
(r"(a)(?:b)(?<c>c)?(d)", "", r"abd abcd", 3, &[&[Some(r"abd"), Some(r"a"), None, Some(r"d")], &[Some(r"abcd"), Some(r"a"), Some(r"c"), Some(r"d")]]),
(r"(?<\u0061b>x)", "", r"x", 1, &[&[Some(r"x"), Some(r"x")]]),
(r"(?<é>x)", "", r"x", 1, &[&[Some(r"x"), Some(r"x")]]),
(r"(a)|b", "", r"b a", 1, &[&[Some(r"b"), None], &[Some(r"a"), Some(r"a")]]),
(r"a+?", "", r"aaa", 0, &[&[Some(r"a")], &[Some(r"a")], &[Some(r"a")]]),
(r"a+", "", r"aaa", 0, &[&[Some(r"aaa")]]),
(r"a*?b", "", r"aab", 0, &[&[Some(r"aab")]]),
(r"a{2,}?", "", r"aaaaa", 0, &[&[Some(r"aa")], &[Some(r"aa")]]),
(r"a{2,3}", "", r"aaaaaaa", 0, &[&[Some(r"aaa")], &[Some(r"aaa")]]),
(r"a{2}", "", r"aaaaa", 0, &[&[Some(r"aa")], &[Some(r"aa")]]),
(r"a{0}b", "", r"ab", 0, &[&[Some(r"b")]]),
(r"<.*>", "", r"<a><b>", 0, &[&[Some(r"<a><b>")]]),
(r"<.*?>", "", r"<a><b>", 0, &[&[Some(r"<a>")], &[Some(r"<b>")]]),
(r"a??b", "", r"ab b", 0, &[&[Some(r"ab")], &[Some(r"b")]]),
(r"(?:ab)+", "", r"ababx", 0, &[&[Some(r"abab")]]),
(r"a{1,99999999999999}", "", r"aaa", 0, &[&[Some(r"aaa")]]),
(r"a{", "", r"a{", 0, &[&[Some(r"a{")]]),
(r"{", "", r"x{y", 0, &[&[Some(r"{")]]),
(r"a{,2}", "", r"a{,2}", 0, &[&[Some(r"a{,2}")]]),
(r"x{1,2", "", r"x{1,2", 0, &[&[Some(r"x{1,2")]]),
(r"}", "", r"}", 0, &[&[Some(r"}")]]),
(r"]", "", r"]", 0, &[&[Some(r"]")]]),
(r"a{b}", "", r"a{b}", 0, &[&[Some(r"a{b}")]]),
(r"{1", "", r"{1", 0, &[&[Some(r"{1")]]),
(r"a|", "", r"ba", 0, &[&[Some(r"")], &[Some(r"a")], &[Some(r"")]]),
(r"|b", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
(r"(?:)", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
(r"", "", r"ab", 0, &[&[Some(r"")], &[Some(r"")], &[Some(r"")]]),
(r"a||b", "", r"ab", 0, &[&[Some(r"a")], &[Some(r"")], &[Some(r"")]]),
(r"(|a)", "", r"a", 1, &[&[Some(r""), Some(r"")], &[Some(r""), Some(r"")]]),
(r"\p{L}+", "u", r"héllo 123 мир", 0, &[&[Some(r"héllo")], &[Some(r"мир")]]),
(r"\P{L}+", "u", r"ab12 c", 0, &[&[Some(r"12 ")]]),
(r"[\p{Nd}x]+", "u", r"a1٣x", 0, &[&[Some(r"1٣x")]]),
(r"\p{Script=Greek}+", "u", r"abc αβγ", 0, &[&[Some(r"αβγ")]]),
(r"\p{sc=Cyrillic}", "u", r"aж", 0, &[&[Some(r"ж")]]),
(r"\p{Lu}", "iu", r"aB", 0, &[&[Some(r"a")], &[Some(r"B")]]),
(r"\p{gc=Lu}", "u", r"aB", 0, &[&[Some(r"B")]]),
(r"\p{ASCII_Hex_Digit}+", "u", r"xbeefz", 0, &[&[Some(r"beef")]]),
(r"\p{Any}", "u", r"😀", 0, &[&[Some(r"😀")]]),
(r"\p{Zl}", "u", "a\u{2028}", 0, &[&[Some("\u{2028}")]]),
(r"[\p{Cs}a]", "u", r"ab", 0, &[&[Some(r"a")]]),
// Unicode 17.0 (Node 20.20, `process.versions.unicode` 17.0): code points that changed from 16.0 (U+A7F1 Latin,
// U+0295 Lo, the new Latin and Beria Erfe case pairs), its new scripts, and names the old tables lacked.
(r"\p{Script=Latin}+", "u", "x\u{a7f1}\u{a7ce}\u{a7cf}\u{378}", 0, &[&[Some("x\u{a7f1}\u{a7ce}\u{a7cf}")]]),
(r"\p{Lo}", "u", "a\u{295}", 0, &[&[Some("\u{295}")]]),
(r"\p{Ll}+", "u", "a\u{295}\u{a7cf}\u{16ebb}", 0, &[&[Some("a")], &[Some("\u{a7cf}\u{16ebb}")]]),
(r"\p{sc=Sidt}+", "u", "a\u{10940}\u{10959}\u{1095a}", 0, &[&[Some("\u{10940}\u{10959}")]]),
(r"\p{Script=Tolong_Siki}+", "u", "\u{11daf}\u{11db0}\u{11ddb}\u{11ddc}\u{11de0}", 0, &[&[Some("\u{11db0}\u{11ddb}")], &[Some("\u{11de0}")]]),
(r"\p{sc=Beria_Erfe}+", "u", "\u{16ea0}\u{16eb8}\u{16eb9}\u{16ebb}", 0, &[&[Some("\u{16ea0}\u{16eb8}")], &[Some("\u{16ebb}")]]),
(r"\p{scx=Tayo}", "u", "a\u{1e6c0}", 0, &[&[Some("\u{1e6c0}")]]),
(r"\p{Script=Unknown}", "u", "a\u{378}\u{88f}\u{e0080}", 0, &[&[Some("\u{378}")], &[Some("\u{e0080}")]]),
(r"\p{sc=Zzzz}", "u", "\u{c5c}\u{1acf}\u{10ffff}", 0, &[&[Some("\u{10ffff}")]]),
(r"\p{scx=Unknown}+", "u", "a\u{378}\u{379}\u{88f}", 0, &[&[Some("\u{378}\u{379}")]]),
(r"\P{scx=Zzzz}+", "u", "a\u{88f}\u{378}", 0, &[&[Some("a\u{88f}")]]),
(r"\p{CWKCF}+", "u", "aA\u{a7ce}\u{a7cf}\u{16ea0}", 0, &[&[Some("A\u{a7ce}")], &[Some("\u{16ea0}")]]),
(r"\p{Changes_When_NFKC_Casefolded}", "u", "a\u{a7f1}", 0, &[&[Some("\u{a7f1}")]]),
(r"\p{WSpace}+", "u", "a \u{9}\u{3000}b", 0, &[&[Some(" \u{9}\u{3000}")]]),
(r"\u{A7CE}+", "iu", "a\u{a7cf}\u{a7ce}", 0, &[&[Some("\u{a7cf}\u{a7ce}")]]),
(r"\u{16EA0}+", "iu", "\u{16ebb}\u{16ea0}\u{16ebc}", 0, &[&[Some("\u{16ebb}\u{16ea0}")]]),
(r"[\u{A7D2}\u{A7D4}]+", "iv", "\u{a7d3}\u{a7d5}\u{a7d2}", 0, &[&[Some("\u{a7d3}\u{a7d5}\u{a7d2}")]]),
(r"\uA7D4", "i", "\u{a7d5}", 0, &[&[Some("\u{a7d5}")]]),
(r"\p{Lu}+", "iu", "\u{a7cf}\u{16ebb}1", 0, &[&[Some("\u{a7cf}\u{16ebb}")]]),
(r"[^\P{Lu}]+", "iv", "\u{a7cf}\u{16ebb}1", 0, &[&[Some("\u{a7cf}\u{16ebb}")]]),
(r"\P{Ll}", "iu", "\u{a7cf}", 0, &[&[Some("\u{a7cf}")]]),
(r"[\p{sc=Latn}--\p{Ll}]+", "v", "\u{a7ce}\u{a7cf}\u{a7f1}", 0, &[&[Some("\u{a7ce}")], &[Some("\u{a7f1}")]]),
// A set holding U+D7FF and U+E000, negated (regex-syntax joined them across the surrogates' gap).
(r"[^\u{D7FF}\u{E000}]", "u", "\u{d7ff}\u{e000}x", 0, &[&[Some("x")]]),
(r"[^\uD7FF\uE000]", "", "\u{d7ff}\u{e000}x", 0, &[&[Some("x")]]),
(r"\p{C}", "u", "a\u{d7ff}\u{e000}", 0, &[&[Some("\u{d7ff}")], &[Some("\u{e000}")]]),
// With `iv`, V8 folds before complementing a General_Category or Script (`\P{Ll}`), but complements a
// binary property first and folds after (`\P{Lowercase}`), as without `v`.
(r"\P{Lowercase}", "iv", "aA1", 0, &[&[Some("a")], &[Some("A")], &[Some("1")]]),
(r"[^\P{ASCII}]", "iv", "k\u{212a}\u{e9}", 0, &[]),
(r"\P{CWCF}", "iv", "aA", 0, &[&[Some("a")], &[Some("A")]]),
(r"\P{Ll}", "iv", "aA1", 0, &[&[Some("1")]]),
(r"\P{Cs}", "u", r"a", 0, &[&[Some(r"a")]]),
(r"(?:a|)*b", "", r"aab b", 0, &[&[Some(r"aab")], &[Some(r"b")]]),
(r"(a*)+", "", r"aa b", 1, &[&[Some(r"aa"), Some(r"aa")], &[Some(r""), Some(r"")], &[Some(r""), Some(r"")], &[Some(r""), Some(r"")]]),
(r"(\w+\s?)*", "", r"ab cd", 1, &[&[Some(r"ab cd"), Some(r"cd")], &[Some(r""), None]]),
(r"(?:(a)b)+", "", r"abab", 1, &[&[Some(r"abab"), Some(r"a")]]),
(r"a*", "", r"baaa", 0, &[&[Some(r"")], &[Some(r"aaa")], &[Some(r"")]]),
(r"(?:a*)*?b", "", r"aab", 0, &[&[Some(r"aab")]]),
(r"(b?){2}", "", r"b", 1, &[&[Some(r"b"), Some(r"")], &[Some(r""), Some(r"")]]),
(r"a", "dg", r"aa", 0, &[&[Some(r"a")], &[Some(r"a")]]),
// The `v` flag (unicodeSets): set operations, nested classes, strings, case folding before complements.
(r"[\p{L}--[a-z]]+", "v", "abCDéÉ1", 0, &[&[Some("CDéÉ")]]),
(r"[[a-z]&&[^aeiou]]+", "v", "hello world", 0, &[&[Some("h")], &[Some("ll")], &[Some("w")], &[Some("rld")]]),
(r"[\w--\d]+", "v", "ab12_c3", 0, &[&[Some("ab")], &[Some("_c")]]),
(r"[\q{abc|d}x]", "v", "abcxdab", 0, &[&[Some("abc")], &[Some("x")], &[Some("d")]]),
(r"[\q{abc|ab|}a]", "v", "abcab a", 0, &[&[Some("abc")], &[Some("ab")], &[Some("")], &[Some("a")], &[Some("")]]),
(r"[[\q{ab}a]--\q{ab}]", "v", "abab", 0, &[&[Some("a")], &[Some("a")]]),
(r"[\q{AB}]", "iv", "ab aB AB", 0, &[&[Some("ab")], &[Some("aB")], &[Some("AB")]]),
(r"[^\P{Ll}]", "iv", "aA1", 0, &[&[Some("a")], &[Some("A")]]),
(r"\P{Ll}", "iv", "aA1", 0, &[&[Some("1")]]),
(r"\P{Ll}", "iu", "aA1", 0, &[&[Some("a")], &[Some("A")], &[Some("1")]]),
(r"[\P{Ll}]", "iv", "aA1", 0, &[&[Some("1")]]),
(r"[^a-c]", "iv", "aBd", 0, &[&[Some("d")]]),
(r"[\-\&]+", "v", "x-&y", 0, &[&[Some("-&")]]),
(r"[[a-z]--[aeiou]--[xyz]]+", "v", "abcxyzdef", 0, &[&[Some("bc")], &[Some("d")], &[Some("f")]]),
(r"[a-\uD83D]+", "v", "ab😀c", 0, &[&[Some("ab")], &[Some("c")]]),
(r"[\uD800-\uDBFF]", "v", "a😀", 0, &[]),
// Properties of strings: longest string first, near misses (a flag that is no country, a keycap without
// U+FE0F, a ZWJ sequence cut short) left, in set operations and with `i`; a property without single code
// points is a class V8 does not unroll.
(r"\p{RGI_Emoji}", "v", "a\u{1f600}\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{1f1eb}\u{1f1f7}#\u{fe0f}\u{20e3}x\u{a9}\u{fe0f}\u{a9}", 0, &[&[Some("\u{1f600}")], &[Some("\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}")], &[Some("\u{1f1eb}\u{1f1f7}")], &[Some("#\u{fe0f}\u{20e3}")], &[Some("\u{a9}\u{fe0f}")]]),
(r"\p{Basic_Emoji}", "v", "\u{a9}\u{fe0f} \u{a9} \u{1f600} \u{231a}", 0, &[&[Some("\u{a9}\u{fe0f}")], &[Some("\u{1f600}")], &[Some("\u{231a}")]]),
(r"\p{Emoji_Keycap_Sequence}", "v", "#\u{fe0f}\u{20e3} #\u{20e3} 1\u{fe0f}\u{20e3} 1", 0, &[&[Some("#\u{fe0f}\u{20e3}")], &[Some("1\u{fe0f}\u{20e3}")]]),
(r"\p{RGI_Emoji_Flag_Sequence}", "v", "\u{1f1e6}\u{1f1e6}\u{1f1eb}\u{1f1f7}\u{1f1eb}", 0, &[&[Some("\u{1f1e6}\u{1f1eb}")]]),
(r"\p{RGI_Emoji_Modifier_Sequence}", "v", "\u{1f44b}\u{1f3fd}\u{1f44b}\u{1f3fd}\u{1f3fd}", 0, &[&[Some("\u{1f44b}\u{1f3fd}")], &[Some("\u{1f44b}\u{1f3fd}")]]),
(r"\p{RGI_Emoji_Tag_Sequence}", "v", "\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f} \u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074} \u{1f3f4}", 0, &[&[Some("\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}")]]),
(r"\p{RGI_Emoji_ZWJ_Sequence}", "v", "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{200d}\u{1f466} \u{1f468}\u{200d}\u{1f469}\u{200d} \u{1f468}\u{200d}\u{1f469}", 0, &[&[Some("\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{200d}\u{1f466}")]]),
(r"[\p{RGI_Emoji}--\q{🇫🇷}]", "v", "\u{1f1eb}\u{1f1f7}\u{1f1e9}\u{1f1ea}", 0, &[&[Some("\u{1f1e9}\u{1f1ea}")]]),
(r"[\p{RGI_Emoji}&&\p{Basic_Emoji}]", "v", "\u{1f600}\u{1f1eb}\u{1f1f7}\u{a9}\u{fe0f}", 0, &[&[Some("\u{1f600}")], &[Some("\u{a9}\u{fe0f}")]]),
(r"[\p{RGI_Emoji_Flag_Sequence}\q{🇫}]", "v", "\u{1f1eb}\u{1f1f7}\u{1f1eb}", 0, &[&[Some("\u{1f1eb}\u{1f1f7}")], &[Some("\u{1f1eb}")]]),
(r"[\p{RGI_Emoji}--\p{Emoji_Presentation}]", "v", "\u{1f600}\u{a9}\u{fe0f}#\u{fe0f}\u{20e3}", 0, &[&[Some("\u{a9}\u{fe0f}")], &[Some("#\u{fe0f}\u{20e3}")]]),
(r"\p{RGI_Emoji}", "iv", "\u{1f600}\u{1f1eb}\u{1f1f7}", 0, &[&[Some("\u{1f600}")], &[Some("\u{1f1eb}\u{1f1f7}")]]),
(r"[^\p{RGI_Emoji}&&\p{L}]", "v", "a\u{1f600}", 0, &[&[Some("a")], &[Some("\u{1f600}")]]),
(r"(?:[^<]\p{RGI_Emoji_Flag_Sequence})+", "v", "a\u{1f1eb}\u{1f1f7}<\u{1f1eb}\u{1f1f7}", 0, &[&[Some("a\u{1f1eb}\u{1f1f7}")]]),
// A negated `v` class in a repetition V8 compiles once is taken (see `v8_unrolled_negated_sets_are_refused`):
// `*`, `?`, `{1}`, `{4,}`, a body V8 lets match empty (a `v` class counts 0), one with a capture group, and
// a negated class nested in another.
(r"(?:[^<]b)*", "v", "ab<bab", 0, &[&[Some("ab")], &[Some("")], &[Some("")], &[Some("ab")], &[Some("")]]),
(r"(?:[^<]b)?", "iv", "aB<b", 0, &[&[Some("aB")], &[Some("")], &[Some("")], &[Some("")]]),
(r"(?:[^<]b){1}", "v", "ab<b", 0, &[&[Some("ab")]]),
(r"(?:[^<]b){4,}", "v", "x<abababab", 0, &[&[Some("abababab")]]),
(r"(?:[^<][^<])+", "v", "ab<bab", 0, &[&[Some("ab")], &[Some("ba")]]),
(r"[^<]{2}", "v", "ab<bab", 0, &[&[Some("ab")], &[Some("ba")]]),
(r"([^<]b)+", "v", "ab<bab", 1, &[&[Some("ab"), Some("ab")], &[Some("ab"), Some("ab")]]),
(r"(?:[[^<]]b)+", "v", "ab<b", 0, &[&[Some("ab")]]),
];

/// The translated pattern as the engine runs it: written for the line view (see `crate::rewrite::lines`),
/// which [`view`] gives of a text. (Only patterns with multi-line anchors need it, but every pattern reads
/// the view the same as the text.)
fn compile(src: &str, flags: &str) -> Regex {
    let flags = parse_flags(flags).unwrap();
    let pattern = translate(src, &flags).unwrap_or_else(|e| panic!("/{src}/: {e}"));
    let hir = crate::rewrite::rule::parse(&pattern).unwrap_or_else(|e| panic!("/{src}/ as {pattern:?}: {e}"));
    // Without `u` a pattern may match half of an astral character, which is not UTF-8.
    Regex::builder()
        .configure(Regex::config().utf8_empty(false).line_terminator(lines::LINE_TERMINATOR))
        .build_from_hir(&lines::line_view_hir(&hir))
        .unwrap_or_else(|e| panic!("/{src}/ as {pattern:?}: {e}"))
}

/// What [`compile`]'s regexes read for `hay`.
fn view(hay: &str) -> Vec<u8> {
    let mut view = Vec::new();
    lines::line_view(hay.as_bytes(), &mut view);
    view
}

/// Every match, iterated like JS `matchAll`: after an empty match the search resumes one character later.
fn match_all(re: &Regex, hay: &str) -> Vec<Vec<Option<String>>> {
    let mut caps = re.create_captures();
    let mut out = Vec::new();
    let mut at = 0;
    let viewed = view(hay);
    while at <= hay.len() {
        re.search_captures(&Input::new(&viewed).range(at..), &mut caps);
        let Some(m) = caps.get_match() else { break };
        if !hay.is_char_boundary(m.start()) {
            // A piece of a character the cases here never split: JS never starts there.
            at = m.start() + 1;
            continue;
        }
        let text = |s: regex_automata::Span| String::from_utf8_lossy(&hay.as_bytes()[s.range()]).into_owned();
        out.push((0..caps.group_len()).map(|i| caps.get_group(i).map(text)).collect());
        at = m.end();
        if m.is_empty() {
            at += hay[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

#[test]
fn matches_agree_with_node() {
    let mut failures = Vec::new();
    for &(src, flags, hay, groups, want) in MATCH_CASES {
        let re = compile(src, flags);
        let got = match_all(&re, hay);
        let want: Vec<Vec<Option<String>>> =
            want.iter().map(|m| m.iter().map(|g| g.map(str::to_string)).collect()).collect();
        let got_groups = re.group_info().group_len(PatternID::ZERO) - 1;
        if got != want || got_groups != groups {
            failures.push(format!(
                "/{src}/{flags} on {hay:?}: got {got:?} ({got_groups} groups), want {want:?} ({groups} groups)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn emitted_patterns() {
    let plain = JsFlags::default();
    let m = JsFlags { multiline: true, ..plain };
    let u = JsFlags { unicode: true, ..plain };
    let half = r"(?-u:[\xF0-\xF4][\x80-\xBF][\x80-\xBF]|[\x80-\xBF])";
    let cases = [
        ("^a$", plain, r"\Aa\z"),
        ("^a$", m, "(?:(?m:^)|(?mR:^))a(?:(?m:$)|(?mR:$))"),
        (r"\b\B", plain, r"(?-u:\b)(?-u:\B)"),
        (".", u, r"[^\x{A}\x{D}\x{2028}\x{2029}]"),
        ("[]", plain, NEVER),
        ("[^]", u, "(?s:.)"),
        ("(?:)", plain, "(?:)"),
        ("", plain, "(?:)"),
        ("(?<n>a)(b)", plain, "(?P<n>a)(b)"),
        ("[&&]", plain, r"\&"),
        ("[a-c&]", plain, r"[\x{26}\x{61}-\x{63}]"),
        (r"a{2,}?b*", plain, "a{2,}?b*"),
    ];
    for (src, flags, want) in cases {
        assert_eq!(translate(src, &flags).unwrap(), want, "/{src}/");
    }
    // Without `u`: UTF-16 units, so halves of astral characters (see `units`).
    let units = [
        (".", format!(r"(?:[\x{{0}}-\x{{9}}\x{{B}}\x{{C}}\x{{E}}-\x{{2027}}\x{{202A}}-\x{{FFFF}}]|{half})")),
        ("[^]", format!(r"(?:[\x{{0}}-\x{{FFFF}}]|{half})")),
        (
            r"\s",
            r"[\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]"
                .into(),
        ),
        (r"\uD83D", r"(?-u:\xF0\x9F[\x90-\x9F])".into()),
        ("\u{1F600}", r"\x{1F600}".into()),
        ("\u{1F600}+", r"\x{1F600}".into()),
        ("\u{1F600}{2}", NEVER.into()),
        ("\u{1F600}?", r"(?:\x{1F600}|(?-u:\xF0\x9F[\x90-\x9F]))".into()),
        ("\u{1F600}*?", r"(?:(?-u:\xF0\x9F[\x90-\x9F])|\x{1F600})".into()),
        ("\u{1F600}{0}", r"(?-u:\xF0\x9F[\x90-\x9F])".into()),
    ];
    for (src, want) in units {
        assert_eq!(translate(src, &plain).unwrap(), want, "/{src}/");
    }
    assert_eq!(literal("a.b(c)*"), r"a\.b\(c\)\*");
}

#[test]
fn named_groups_keep_names_and_numbers() {
    let re = compile(r"(?<year>\d{4})-(?<month>\d\d)(x)?(?<\u0064ay>\d\d)", "");
    let names: Vec<_> = re.group_info().pattern_names(PatternID::ZERO).collect();
    assert_eq!(names, [None, Some("year"), Some("month"), None, Some("day")]);
    let mut caps = re.create_captures();
    re.captures("2024-0531", &mut caps);
    assert_eq!(caps.get_group_by_name("day").map(|s| s.range()), Some(7..9));
}

#[test]
fn literal_matches_text() {
    let re = Regex::new(&literal("1+1=[2]")).unwrap();
    assert_eq!(re.find("x 1+1=[2]").map(|m| m.range()), Some(2..9));
}

fn err(src: &str, flags: &str) -> JsRegexError {
    match translate(src, &parse_flags(flags).unwrap()) {
        Ok(pattern) => panic!("/{src}/{flags} translated to {pattern:?}"),
        Err(e) => e,
    }
}

#[test]
fn syntax_errors() {
    // All of these throw a SyntaxError in Node 20 too.
    let cases = [
        ("(?i)a", "", "invalid group", 0),
        ("(?P<a>x)", "", "invalid group", 0),
        ("(?", "", "invalid group", 0),
        ("a**", "", "nothing to repeat", 2),
        ("*a", "", "nothing to repeat", 0),
        ("a|?", "", "nothing to repeat", 2),
        ("a*??", "", "nothing to repeat", 3),
        ("x{1}{2}", "", "nothing to repeat", 4),
        ("{1}", "", "nothing to repeat", 0),
        ("^*", "", "nothing to repeat", 1),
        ("$+", "", "nothing to repeat", 1),
        (r"\b+", "", "nothing to repeat", 2),
        (r"\B{2}", "", "nothing to repeat", 2),
        ("x{2,1}", "", "numbers out of order in {} quantifier", 1),
        ("a{2,1}?", "", "numbers out of order in {} quantifier", 1),
        ("[b-a]", "", "range out of order in character class", 1),
        ("[\u{1F600}-\u{1F602}]", "", "range out of order in character class", 1),
        ("(a", "", "unterminated group", 0),
        ("a)", "", "unmatched `)`", 1),
        ("[a", "", "unterminated character class", 0),
        ("a\\", "", "`\\` at end of pattern", 1),
        ("(?<a>x)(?<a>y)", "", "duplicate capture group name", 7),
        ("(?<1a>x)", "", "invalid capture group name", 3),
        ("(?<>x)", "", "invalid capture group name", 3),
        (r"(?<a>x)\k", "", "invalid named reference", 7),
        (r"(?<a>x)\k<b>", "", "invalid named capture referenced", 7),
        (r"(?<a>x)[\k]", "", "invalid escape", 8),
        (r"\a", "u", "invalid escape", 0),
        (r"a\-", "u", "invalid escape", 1),
        (r"\_", "u", "invalid escape", 0),
        (r"[\B]", "u", "invalid escape", 1),
        ("{", "u", "lone quantifier brackets", 0),
        ("}", "u", "lone quantifier brackets", 0),
        ("]", "u", "lone quantifier brackets", 0),
        ("a{2", "u", "incomplete quantifier", 1),
        ("a{,2}", "u", "incomplete quantifier", 1),
        (r"[\d-a]", "u", "invalid character class", 3),
        (r"[a-\d]", "u", "invalid character class", 2),
        (r"\1", "u", "invalid escape", 0),
        (r"\00", "u", "invalid decimal escape", 0),
        (r"[\1]", "u", "invalid class escape", 1),
        (r"\c1", "u", "invalid unicode escape", 0),
        (r"[\c1]", "u", "invalid unicode escape", 1),
        (r"\u{110000}", "u", "invalid unicode escape", 0),
        (r"\u12", "u", "invalid unicode escape", 0),
        (r"\x4", "u", "invalid escape", 0),
        (r"\p{Greek}", "u", "invalid property name", 0),
        (r"\p{letter}", "u", "invalid property name", 0),
        (r"\p{Foo=Bar}", "u", "invalid property name", 0),
        (r"\p{Script=Foo}", "u", "invalid property name", 0),
        // Named by PropertyValueAliases.txt, refused by V8 (ICU has no such script).
        (r"\p{sc=Hrkt}", "u", "invalid property name", 0),
        (r"\p{scx=Katakana_Or_Hiragana}", "u", "invalid property name", 0),
        // UCD binary properties ECMAScript does not list.
        (r"\p{Hyphen}", "u", "invalid property name", 0),
        (r"\p{InCB}", "u", "invalid property name", 0),
        (r"\p{gc=Latin}", "u", "invalid property name", 0),
        (r"\p{sc=Lu}", "u", "invalid property name", 0),
        (r"\p{L", "u", "invalid property name", 0),
        (r"\pL", "u", "invalid property name", 0),
        (r"\k", "u", "invalid named reference", 0),
        (r"\k<a>", "u", "invalid named capture referenced", 0),
        // What may contain strings cannot be negated: decided on the pattern, not on the set it makes.
        (r"[^\p{RGI_Emoji}]", "v", "negated character class may contain strings", 0),
        (r"a[^[\p{RGI_Emoji}--\p{RGI_Emoji}]]", "v", "negated character class may contain strings", 1),
        (r"[^[\q{ab}--\q{ab}]]", "v", "negated character class may contain strings", 0),
        (r"[^\q{a|}]", "v", "negated character class may contain strings", 0),
        (r"[^\p{Basic_Emoji}\p{L}]", "v", "negated character class may contain strings", 0),
        (r"\P{RGI_Emoji}", "v", "invalid property name", 0),
        (r"[\P{RGI_Emoji_ZWJ_Sequence}]", "v", "invalid property name", 1),
        (r"\p{RGI_Emoji}", "u", "invalid property name", 0),
        (r"\p{rgi_emoji}", "v", "invalid property name", 0),
        (r"\p{RGI_Emoji=Yes}", "v", "invalid property name", 0),
    ];
    for (src, flags, message, offset) in cases {
        let want = JsRegexError::Syntax { message: message.into(), offset };
        assert_eq!(err(src, flags), want, "/{src}/{flags}");
    }
}

#[test]
fn unsupported_features() {
    let long = "a".repeat(70 * 1024);
    let deep = format!("{}a{}", "(".repeat(129), ")".repeat(129));
    let engine_deep = format!("{}a{}", "(?:b|".repeat(100), ")+".repeat(100));
    // Node 20 accepts all of these except the modifier groups (ES2025).
    let cases = [
        ("(?=a)", "", "lookahead (?=", 0, ENGINE_HINT),
        ("(?=a)*", "", "lookahead (?=", 0, ENGINE_HINT),
        ("a(?!b)", "", "negative lookahead (?!", 1, ENGINE_HINT),
        ("(?<=a)b", "", "lookbehind (?<=", 0, ENGINE_HINT),
        ("x(?<!a)b", "", "negative lookbehind (?<!", 1, ENGINE_HINT),
        (r"(a)\1", "", r"backreference \1", 3, ENGINE_HINT),
        (r"(a)\1", "u", r"backreference \1", 3, ENGINE_HINT),
        (r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10", "", r"backreference \10", 30, ENGINE_HINT),
        (r"\2(a)(b)", "", r"backreference \2", 0, ENGINE_HINT),
        (r"(?<n>a)\k<n>", "", r"backreference \k<n>", 7, ENGINE_HINT),
        (r"(?<n>a)\k<n>", "u", r"backreference \k<n>", 7, ENGINE_HINT),
        (r"\k<n>(?<n>a)", "", r"backreference \k<n>", 0, ENGINE_HINT),
        ("(?i:a)", "", "modifiers group (?i:", 0, " (ES2025 modifiers are not supported)"),
        ("(?-i:a)", "", "modifiers group (?-i:", 0, " (ES2025 modifiers are not supported)"),
        ("(?i-s:a)", "", "modifiers group (?i-s:", 0, " (ES2025 modifiers are not supported)"),
        ("a{4294967296}", "", "repetition count 4294967296 (the engine's limit is 4294967295)", 1, ""),
        (&long, "", "pattern longer than 65536 bytes", 65536, ""),
        (
            &engine_deep,
            "",
            "nesting deeper than the engine allows",
            495,
            " (each group, repetition and alternative counts)",
        ),
        (&deep, "", "nesting deeper than 128", 128, ""),
    ];
    for (src, flags, feature, offset, hint) in cases {
        let want = JsRegexError::Unsupported { feature: feature.into(), offset, hint: hint.into() };
        assert_eq!(err(src, flags), want, "/{}/{flags}", &src[..src.len().min(40)]);
    }
}

#[test]
fn limits_that_pass() {
    let deep = format!("{}a{}", "(".repeat(128), ")".repeat(128));
    let re = compile(&deep, "");
    assert_eq!(re.group_info().group_len(PatternID::ZERO), 129);
    assert!(re.is_match("a"));
    // The longest pattern translates; compiling it is the engine's business (and slow in debug builds), so
    // compile a shorter one.
    let long = "ab".repeat(32 * 1024);
    assert!(translate(&long, &parse_flags("i").unwrap()).is_ok());
    let short = &long[..4096];
    assert!(compile(short, "i").is_match(&short.to_uppercase()));
}

#[test]
fn error_messages_name_feature_and_offset() {
    assert_eq!(
        err("a(?=b)", "").to_string(),
        "unsupported regex feature: lookahead (?= at offset 1 (a non-backtracking engine cannot run it)"
    );
    assert_eq!(err("a)", "").to_string(), "invalid regex: unmatched `)` at offset 1");
    assert_eq!(
        err(r"[^\p{RGI_Emoji}]", "v").to_string(),
        "invalid regex: negated character class may contain strings at offset 0"
    );
    assert_eq!(parse_flags("gg").unwrap_err().to_string(), "invalid regex flags `gg`");
}

#[test]
fn flags() {
    let all = JsFlags {
        global: true,
        ignore_case: true,
        multiline: true,
        dot_all: true,
        unicode: true,
        sticky: true,
        unicode_sets: false,
    };
    assert_eq!(parse_flags("dgimsuy"), Ok(all));
    assert_eq!(parse_flags("dgimsvy"), Ok(JsFlags { unicode_sets: true, ..all }));
    assert_eq!(parse_flags(""), Ok(JsFlags::default()));
    assert_eq!(parse_flags("uv"), Err(JsRegexError::InvalidFlags("uv".into())));
    for bad in ["gg", "x", "yy", "gy x", "G"] {
        assert_eq!(parse_flags(bad), Err(JsRegexError::InvalidFlags(bad.into())), "{bad:?}");
    }
}

/// Where the engine cannot follow JS, pin down what we do instead.
#[test]
fn documented_differences() {
    let starts = |src: &str, flags: &str, hay: &str| -> Vec<usize> {
        compile(src, flags).find_iter(&view(hay)).map(|m| m.start()).collect()
    };
    // Without `u` an astral character is two units: `.` takes half of it (its first three bytes, or its
    // last one), so `^.$` does not match it and `^..$` does (Node 20: /^..$/.test("😀") is true).
    assert_eq!(starts("^.$", "", "\u{1F600}"), [] as [usize; 0]);
    assert_eq!(starts("^..$", "", "\u{1F600}"), [0]);
    assert_eq!(starts("^.$", "u", "\u{1F600}"), [0]);
}

#[test]
fn names_the_engine_refuses_are_passed_to_it_encoded_and_read_back() {
    use super::groups::{engine_name, js_name};
    let re = compile(r"(?<$>a)(?<_\u200C>b)(?<$𐒤>c)(?<x>d)(?<é>e)", "");
    let names: Vec<_> = re.group_info().pattern_names(PatternID::ZERO).map(|n| n.map(js_name)).collect();
    assert_eq!(
        names,
        [
            None,
            Some("$".into()),
            Some("_\u{200C}".into()),
            Some("$\u{104A4}".into()),
            Some("x".into()),
            Some("é".into())
        ]
    );
    // Names the engine takes stay as they are; the others are told apart from every JavaScript name.
    for name in ["x", "_", "é", "a1", "$", "_$", "$_", "\u{1D4D1}", "a\u{301}", "_\u{200D}"] {
        let encoded = engine_name(name);
        assert_eq!(js_name(&encoded), name, "{encoded}");
        let plain = name.chars().next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && name.chars().all(|c| c == '_' || c.is_alphanumeric());
        assert_eq!(encoded == name, plain, "{name} -> {encoded}");
    }
    assert_eq!(engine_name("$"), "_.[24]");
    assert_ne!(engine_name("_$"), engine_name("$_"));
}

/// Node 20's V8 (11.3) complements a `v` class negated as a whole again each time it compiles it, and it
/// compiles a repetition's body more than once when it unrolls it: what each copy matches then depends on
/// the whole text (see `class_sets::RepeatedAtom`). Those rules are refused at the negated class. V8's
/// answers: `" \u2028É \r\n1é😁😁\r\n".replace(/\r\n*?(?:[^<][\ud83d\ude00]*?.){2,}[😀]??/giv, f)` calls
/// `f` never (with `u`: once, on `\r\n1é😁`), `"abcd".replace(/(?:[^<].){2}/v, "-")` is `"abcd"` (with `u`:
/// `"-"`), `/(?:[^<]b)+/v` does not match `ab` and matches `<b`, and `/(?:[^<]b){3}/v` matches `ababab` but
/// not in `abababĀ`.
#[test]
fn v8_unrolled_negated_sets_are_refused() {
    let hint = " (Node 20's V8 complements it again in each copy: `/(?:[^<]b)+/v` does not match `ab`; \
                `[^<]+`, `(?:[^<]b)*` and `([^<]b)+` are taken)";
    let cases = [
        (r"\r\n*?(?:[^<][\ud83d\ude00]*?.){2,}[😀]??", "giv", 9),
        (r"(?:[^<].){2}", "v", 3),
        (r"(?:[^<]b)+", "v", 3),
        (r"(?:[^<]b)+?", "iv", 3),
        (r"(?:[^<]b){3}", "v", 3),
        (r"(?:[^<]b){1,3}", "v", 3),
        (r"(?:x|[^<]b){0,2}", "v", 5),
        (r"(?:[^<]b|c)+", "v", 3),
        (r"(?:[^<]+b)+", "v", 3),
        (r"(?:(?:[^<]b)*c)+", "v", 6),
        (r"((?:[^<]b)+)", "v", 4),
        (r"(?:[^[<]]b)+", "v", 3),
        (r"a(?:[ab][^\d]\w)+", "v", 8),
        // A property of strings with single code points counts as a character there (`<😀` matches), one
        // without as a class (see MATCH_CASES).
        (r"(?:[^<]\p{RGI_Emoji})+", "v", 3),
        (r"(?:[^<]\p{Basic_Emoji}){2}", "v", 3),
    ];
    for (src, flags, offset) in cases {
        let want = JsRegexError::Unsupported {
            feature: "a negated `v` class in a repetition V8 unrolls".into(),
            offset,
            hint: hint.into(),
        };
        assert_eq!(err(src, flags), want, "/{src}/{flags}");
    }
    // Inside a look-around too: V8 compiles it with the body around it.
    let looks = translate_with_looks(r"(?:(?=[^<])\w)+", &parse_flags("v").unwrap());
    assert!(matches!(looks, Err(JsRegexError::Unsupported { offset: 6, .. })), "{:?}", looks.err());
    // Without `v` a class is compiled as the spec says, and so is it with `u`.
    assert_eq!(match_all(&compile(r"(?:[^<].){2}", "u"), "abcd"), [[Some("abcd".to_string())]]);
}

/// With `i` and `u`, a `\b` or `\B` takes a look-around for each side not known to be a word character (see
/// `Parser::word_boundary`): none between two literal ones, and what follows `|`, opens a group or is optional
/// is not known.
#[test]
fn word_boundaries_under_iu_look_only_at_sides_not_known() {
    let iu = parse_flags("iu").unwrap();
    let cases = [
        (r"\bfoo\b", 2),
        (r"\b", 4),
        (r"a\bb", 0),
        (r"a\Bb", 0),
        (r"s?\bk", 1),
        (r"x|\bs", 1),
        (r"x(?:\bs)+", 1),
        (r"a(?=b)\b-", 1 + 4),
        (r"a\b-", 1),
        (r"\bs*", 4),
        (r"\bs{0,2}", 4),
        (r"\b\x61", 4),
    ];
    for (src, looks) in cases {
        let got = super::translate_with_looks(src, &iu).unwrap_or_else(|e| panic!("/{src}/iu: {e}")).looks.len();
        assert_eq!(got, looks, "/{src}/iu");
    }
}
