package roundtrip

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
)

// maxRepeat bounds an open repetition (x*, x+, x{2,}) in a pattern.
const maxRepeat = 4

// pattern is a string that matches the ECMA-style pattern p (as Go's RE2
// reads it), of at most about limit runes when it can, checked against p;
// ok false when p does not compile or the attempt does not match (the
// caller tries again or leaves the field out).
func (g *generator) pattern(p string, limit int) (string, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	g.fromRegexp(re.Simplify(), &b, max(limit, 1))
	s := b.String()
	// A pattern is unanchored unless it says ^...$: what was generated
	// for the expression matches it wherever it stands.
	ok, err := regexp.MatchString(p, s)
	return s, err == nil && ok
}

func (g *generator) fromRegexp(re *syntax.Regexp, b *strings.Builder, limit int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.rnd.IntN(2) == 0 {
				r = unicode.SimpleFold(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.fromClass(re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte("abcdefghijklmnopqrstuvwxyz"[g.rnd.IntN(26)])
	case syntax.OpCapture:
		g.fromRegexp(re.Sub[0], b, limit)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			g.fromRegexp(sub, b, limit)
		}
	case syntax.OpAlternate:
		g.fromRegexp(re.Sub[g.rnd.IntN(len(re.Sub))], b, limit)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, -1
		case syntax.OpPlus:
			lo, hi = 1, -1
		case syntax.OpQuest:
			lo, hi = 0, 1
		}
		if hi < 0 {
			hi = lo + maxRepeat
		}
		// Stay near limit: a long repetition only when there is room.
		if room := limit - b.Len(); hi > lo && room < hi {
			hi = max(lo, room)
		}
		for range lo + g.rnd.IntN(hi-lo+1) {
			g.fromRegexp(re.Sub[0], b, limit)
		}
	}
	// Anchors, word boundaries and the empty match write nothing.
}

// fromClass picks a rune of a class given as [lo, hi] pairs, preferring
// printable ASCII so that the value reads well in a report.
func (g *generator) fromClass(ranges []rune) rune {
	var ascii [][2]rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], 0x21), min(ranges[i+1], 0x7e)
		if lo <= hi {
			ascii = append(ascii, [2]rune{lo, hi})
		}
	}
	if len(ascii) > 0 {
		r := ascii[g.rnd.IntN(len(ascii))]
		return r[0] + rune(g.rnd.IntN(int(r[1]-r[0])+1))
	}
	if len(ranges) < 2 {
		return 'a'
	}
	i := 2 * g.rnd.IntN(len(ranges)/2)
	return ranges[i] + rune(g.rnd.IntN(int(min(ranges[i+1]-ranges[i], 0xffff))+1))
}
