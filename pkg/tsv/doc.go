// Package tsv is Mill's one encoder of tab-separated cells: every TSV Mill
// writes (the bit-integrity reports of processors/bitreport; also the
// identifiers and details millctl prints in its bit-log tables and the
// details a report's notification lists) encodes its cells with Cell, and
// Split reads such a line back. A cell holds any string,
// hostile ones included, and stays one cell on one line that neither a
// spreadsheet nor a terminal or text viewer takes for more than text:
//
//   - Escapes keep it on one line and in one column: backslash, tab,
//     newline and carriage return become \\, \t, \n and \r; every other
//     control character (C0, DEL, C1) becomes \u00XX; a byte that is not
//     UTF-8 becomes \xXX.
//   - Bidirectional and line-separator characters, which reorder or break
//     what a viewer shows, are escaped visibly as \uXXXX (lower-case hex):
//     U+2028, U+2029, the embeddings and overrides U+202A–U+202E, the
//     isolates U+2066–U+2069, and the marks U+200E, U+200F and U+061C.
//   - Formula injection (the OWASP CSV-injection rule): a value that starts
//     with '=', '+', '-', '@', a tab or a carriage return — which a
//     spreadsheet would run as a formula — is prefixed with a single quote
//     ('), and so is a value that starts with a quote itself, so that the
//     prefix is always removed again on reading.
//
// Reading reverses it: Unescape(Cell(s)) == s for every string s, and
// Split of a Line without its newline gives its fields back. A cell
// written before the quote and \u escapes existed reads the same, unless
// it starts with a quote.
package tsv
