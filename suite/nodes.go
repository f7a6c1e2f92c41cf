package suite

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// key returns the key node of name in a mapping, or nil.
func key(m *yaml.Node, name string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i]
		}
	}
	return nil
}

// value returns the value node of name in a mapping, or nil.
func value(m *yaml.Node, name string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, name string) string {
	if v := value(m, name); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// keyLine is the line of name's key in m, else m's.
func keyLine(m *yaml.Node, name string) int {
	if k := key(m, name); k != nil {
		return k.Line
	}
	return m.Line
}

// pathLine is the line of a dotted field path (expect.code), as deep as
// it goes.
func pathLine(m *yaml.Node, path string) int {
	line := m.Line
	for _, p := range strings.Split(path, ".") {
		k := key(m, p)
		if k == nil {
			break
		}
		line, m = k.Line, value(m, p)
	}
	return line
}

// findKeyLine is the line of the first key named name anywhere under m.
func findKeyLine(m *yaml.Node, name string) int {
	var walk func(n *yaml.Node) int
	walk = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == name {
					return n.Content[i].Line
				}
			}
		}
		for _, c := range n.Content {
			if l := walk(c); l != 0 {
				return l
			}
		}
		return 0
	}
	if l := walk(m); l != 0 {
		return l
	}
	return m.Line
}
