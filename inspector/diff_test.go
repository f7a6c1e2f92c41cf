package inspector

import (
	"fmt"
	"strings"
	"testing"
)

func TestSideBySide(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          string // kinds, one letter per line: s(ame) d(el) a(dd) c(hange)
	}{
		{name: "equal", before: "a\nb\n", after: "a\nb\n", want: "ss"},
		{name: "added in the middle", before: "a\nc\n", after: "a\nb\nc\n", want: "sas"},
		{name: "removed at the end", before: "a\nb\nc\n", after: "a\nb\n", want: "ssd"},
		{name: "changed line is paired", before: "a\nx\nc\n", after: "a\ny\nc\n", want: "scs"},
		{name: "change then add", before: "a\nx\nc\n", after: "a\ny\nz\nc\n", want: "scas"},
		{name: "from nothing", before: "", after: "a\nb\n", want: "aa"},
	}
	letter := map[string]string{"same": "s", "del": "d", "add": "a", "change": "c"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			lines := sideBySide(tt.before, tt.after)
			for _, l := range lines {
				got.WriteString(letter[l.Kind])
			}
			if got.String() != tt.want {
				t.Errorf("kinds = %s, want %s: %+v", got.String(), tt.want, lines)
			}
			// Numbers count each side's lines in order.
			left, right := 0, 0
			for _, l := range lines {
				if l.LeftNo != 0 {
					left++
					if l.LeftNo != left {
						t.Errorf("left numbers out of order: %s", fmt.Sprint(lines))
					}
				}
				if l.RightNo != 0 {
					right++
					if l.RightNo != right {
						t.Errorf("right numbers out of order: %s", fmt.Sprint(lines))
					}
				}
			}
		})
	}
}

func TestFold(t *testing.T) {
	var before, after strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&before, "line %d\n", i)
		if i == 10 {
			after.WriteString("changed\n")
			continue
		}
		fmt.Fprintf(&after, "line %d\n", i)
	}
	var kinds []string
	for _, l := range fold(sideBySide(before.String(), after.String())) {
		k := l.Kind
		if k == "fold" {
			k += "(" + l.Left + ")"
		}
		kinds = append(kinds, k)
	}
	want := "fold(7 unchanged lines) same same same change same same same fold(6 unchanged lines)"
	if strings.Join(kinds, " ") != want {
		t.Errorf("folded: %s\nwant:   %s", strings.Join(kinds, " "), want)
	}
}
