package inspector

import "strings"

// maxDiffCells bounds the line diff's table (lines before x lines after,
// once the common head and tail are set aside); past it the changed middle
// is shown as removed, then added.
const maxDiffCells = 4 << 20

// diffLine is one line of a side-by-side diff: Left is the line before,
// Right the line after; Kind is "same", "del", "add" or "change", or "fold"
// for a run of unchanged lines left out (Left says how many).
type diffLine struct {
	LeftNo, RightNo int
	Left, Right     string
	Kind            string
}

// sideBySide diffs two texts line by line (longest common subsequence) and
// pairs removed lines with the added lines that replace them.
func sideBySide(before, after string) []diffLine {
	a, b := splitLines(before), splitLines(after)
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []diffLine
	for i := 0; i < head; i++ {
		out = append(out, diffLine{LeftNo: i + 1, RightNo: i + 1, Left: a[i], Right: b[i], Kind: "same"})
	}
	out = append(out, middle(a[head:len(a)-tail], b[head:len(b)-tail], head, head)...)
	for i := tail; i > 0; i-- {
		ai, bi := len(a)-i, len(b)-i
		out = append(out, diffLine{LeftNo: ai + 1, RightNo: bi + 1, Left: a[ai], Right: b[bi], Kind: "same"})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// middle diffs the changed part; offA and offB number its lines.
func middle(a, b []string, offA, offB int) []diffLine {
	if len(a)*len(b) > maxDiffCells {
		return pair(a, b, offA, offB)
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	var delA, addB []string
	startA, startB := 0, 0
	flush := func() {
		out = append(out, pair(delA, addB, offA+startA, offB+startB)...)
		delA, addB = nil, nil
	}
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			flush()
			out = append(out, diffLine{LeftNo: offA + i + 1, RightNo: offB + j + 1, Left: a[i], Right: b[j], Kind: "same"})
			i, j = i+1, j+1
			startA, startB = i, j
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			addB = append(addB, b[j])
			j++
		default:
			delA = append(delA, a[i])
			i++
		}
	}
	flush()
	return out
}

// pair lays removed lines beside the added ones: a line on both sides is a
// change, the rest are removals or additions.
func pair(del, add []string, offA, offB int) []diffLine {
	var out []diffLine
	for k := 0; k < max(len(del), len(add)); k++ {
		l := diffLine{Kind: "change"}
		if k < len(del) {
			l.LeftNo, l.Left = offA+k+1, del[k]
		} else {
			l.Kind = "add"
		}
		if k < len(add) {
			l.RightNo, l.Right = offB+k+1, add[k]
		} else {
			l.Kind = "del"
		}
		out = append(out, l)
	}
	return out
}

// diffContext is how many unchanged lines are shown around a change.
const diffContext = 3

// fold replaces runs of unchanged lines further than diffContext from any
// change by one "fold" line.
func fold(lines []diffLine) []diffLine {
	near := make([]bool, len(lines))
	for i, l := range lines {
		if l.Kind == "same" {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(lines)-1, i+diffContext); j++ {
			near[j] = true
		}
	}
	var out []diffLine
	for i := 0; i < len(lines); {
		if near[i] || lines[i].Kind != "same" {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && !near[j] {
			j++
		}
		out = append(out, diffLine{Kind: "fold", Left: plural(j-i, "unchanged line")})
		i = j
	}
	return out
}
