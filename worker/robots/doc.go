// Package robots implements the Robots Exclusion Protocol (RFC 9309) for
// freshcrawl workers: a parser and matcher for robots.txt, and a Checker that
// fetches robots.txt once per origin and shares it between workers through a
// Store (a JetStream key-value bucket in production).
//
// The matcher is written here rather than taken from a library because the
// details that decide compliance — group selection by exact product token,
// combining groups, longest-match precedence with ties going to allow,
// wildcard and end anchors, and percent-encoding equivalence — are exactly
// where common libraries diverge from the RFC.
//
// # Rules implemented (RFC 9309 §2)
//
//   - Groups (§2.2, §2.2.1): a group starts with one or more user-agent lines
//     and continues with its rules; a user-agent line after a rule starts a new
//     group. Rules before the first user-agent line belong to no group and are
//     ignored. The token of a user-agent line is its value's leading run of
//     identifier characters (letters, '-', '_'; the RFC's product-token
//     grammar), so "FreshCrawl/2.0" names "freshcrawl". It matches the
//     crawler's product token only if the two are equal ignoring case
//     (§2.2.1: "MUST be matched case-insensitively"); there is no substring or
//     prefix matching, so a "freshcrawl" group does not apply to a crawler
//     called "freshcrawlbot" and a "freshcrawl-bad" group does not apply to
//     "freshcrawl". All groups naming the crawler are combined; if none does,
//     all "*" groups are combined; if there is no "*" group either, everything
//     is allowed.
//   - Rules (§2.2.2): the matching rule with the longest pattern (in octets,
//     after percent-encoding normalisation) decides; an allow and a disallow
//     of equal length resolve to allow. No matching rule means allowed. An
//     empty pattern is no rule. Paths are matched case-sensitively against
//     the URL's path plus "?" and the query. "/robots.txt" is always allowed.
//   - Special characters (§2.2.3): '*' matches any sequence of octets and a
//     '$' ending the pattern anchors it at the end of the path; a '$'
//     elsewhere is literal. Matching is greedy and runs in O(len(path) ×
//     len(pattern)) worst case, never exponential.
//   - Percent-encoding (§2.2.2): pattern and path are both normalised before
//     comparison: %XX of an unreserved character (RFC 3986 §2.3) is decoded,
//     other %XX escapes are upper-cased, and octets that cannot appear
//     literally in a URL (non-ASCII UTF-8, controls, space, '"', '<', '>',
//     '\', '^', '`', '{', '|', '}') are encoded. "/%7Ejoe" and "/~joe" are
//     thus equal, and a non-ASCII pattern matches its encoded path. Reserved
//     characters are never decoded: "%2F" is not "/".
//   - Limits (§2.5): the first MaxBodySize (512 KiB, above the RFC's minimum
//     of 500 KiB) octets are parsed; the rest, and a line cut by that limit,
//     are ignored.
//   - Also tolerated: a UTF-8 byte order mark, CR, LF or CRLF line ends,
//     comments (the grammar of §2.2), field names in any case and some
//     common misspellings, no space around the colon, and a missing colon
//     ("Disallow /x"). Unparsable and unknown lines are ignored (§2.3.1.5,
//     §2.2.4). The non-standard crawl-delay (seconds, possibly fractional)
//     is kept per group, and sitemap lines (§2.2.4) are collected.
//
// # Fetching and caching (RFC 9309 §2.3, §2.4)
//
// A Checker keys robots.txt by origin (scheme, host and port). 2xx bodies
// are parsed; 4xx means no restrictions, except 429, which like 5xx and
// network errors means "disallow all" until Options.RetryUnreachable has
// passed. Successful results are reused for Options.TTL (at most 24 h).
package robots
