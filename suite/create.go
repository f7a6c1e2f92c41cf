package suite

import "fmt"

// CreateObject returns what a case creates, for `hookback load`: the
// object of a CREATE case (a manifest, a review or a recording), as JSON;
// ok is false for any other case (UPDATE, DELETE, CONNECT, a conversion),
// which a dry-run create cannot send.
func (l *Loaded) CreateObject() (obj []byte, ok bool, err error) {
	if l.Conversion != nil {
		return nil, false, nil
	}
	in, err := readInput(l)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", l.ID(), err)
	}
	if in.conversion != nil || in.req.Operation != "CREATE" || len(in.req.Object.Raw) == 0 {
		return nil, false, nil
	}
	return in.req.Object.Raw, true, nil
}
