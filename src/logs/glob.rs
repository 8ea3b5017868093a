//! The glob of actor paths: `sparkyard logs --actor` filters records with it and the runtime's
//! `PathGlob` (fault injection, `sparkyard actors`) matches paths with it. Logs layer, under
//! the runtime, so both reach it without the logs importing the runtime.

/// Matches `text` against `pattern`, where `*` matches any run of characters (including
/// none and including `/`) and every other character matches itself. Iterative with one
/// backtrack point, so it runs in O(pattern × text) at worst and never recurses.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<usize> = None;
    let mut star_t = 0usize;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            pi += 1;
            star_t = ti;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            star_t += 1;
            ti = star_t;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}
