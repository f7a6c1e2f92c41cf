package admissionhttp

// countOps counts the operations of a JSON patch (the elements of its
// top-level array) without decoding them: the admission log line's
// patch_ops, computed after the answer has left.
func countOps(patch []byte) int {
	n, depth, inString, escaped := 0, 0, false, false
	for _, c := range patch {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth == 2 {
				n++
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return n
}
