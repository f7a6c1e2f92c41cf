package inspector

import (
	"strings"
	"unicode/utf8"

	"github.com/hookback/hookback/internal/admissionhttp"
)

// States of the shadow column (start --shadow), as the list shows them.
const (
	// ShadowPending: a compared webhook's review whose comparison is not in
	// yet.
	ShadowPending = "pending"
	// ShadowSame: your webhook and the deployed one answered alike.
	ShadowSame = "same"
	// ShadowDiffers: their decision, message or patch operations differ.
	ShadowDiffers = "differs"
	// ShadowDeployedFailed: the deployed webhook's call failed, so there
	// is nothing to compare with.
	ShadowDeployedFailed = "deployed-failed"
	// shadowNone: a review no comparison is made for (a built-in, a
	// conversion, a late answer).
	shadowNone = "none"
)

// maxShadowWaiting bounds the comparisons kept for reviews not recorded
// yet. The transport records a review just after its comparison, so only
// a review it never records (a panic in bookkeeping) leaves one behind.
const maxShadowWaiting = 1024

// maxShadowShort bounds the column's text, in runes: the full difference
// is on the review's page.
const maxShadowShort = 96

// Shadow is how your webhook's answer to one review compared with the
// deployed webhook's (start --shadow).
type Shadow struct {
	// Answer is the AdmissionReview your webhook answered; nil when its
	// call failed, with Failure saying why. Under --shadow hookback itself
	// always allows, so the review's entry shows this answer instead: the
	// one worth debugging.
	Answer  []byte
	Failure string
	// Deployed is the deployed webhook's answer in words (its decision and
	// message); DeployedFailure, when set, is why its call failed.
	Deployed, DeployedFailure string
	// Differences are how the answers differ (decision, message, patch
	// operations by path); empty when alike.
	Differences []string
}

// shadowOutcome is what an entry keeps of a Shadow: not the answer, which
// lives in the arena with the review.
type shadowOutcome struct {
	deployed, deployedFailure string
	differences               []string
	// yours: the entry's answer is your webhook's, not hookback's (the
	// comparison came before the review was recorded).
	yours bool
}

// state is the column's state and text.
func (o *shadowOutcome) state() (string, string) {
	switch {
	case o.deployedFailure != "":
		return ShadowDeployedFailed, short("deployed failed: " + o.deployedFailure)
	case len(o.differences) > 0:
		s := "differs: " + o.differences[0]
		if n := len(o.differences) - 1; n > 0 {
			return ShadowDiffers, short(s) + " (+" + plural(n, "more difference") + ")"
		}
		return ShadowDiffers, short(s)
	}
	return ShadowSame, ShadowSame
}

func short(s string) string {
	if utf8.RuneCountInString(s) <= maxShadowShort {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxShadowShort-1])) + "…"
}

// ShadowWebhooks turns the list's shadow column on: the reviews of these
// webhooks are compared with the deployed webhook's (start --shadow), and
// show pending until SetShadow says how.
func (s *Store) ShadowWebhooks(names ...string) {
	s.shadowing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shadowed == nil {
		s.shadowed = map[string]bool{}
	}
	for _, n := range names {
		s.shadowed[n] = true
	}
}

// shadowColumn reports whether the list has a shadow column.
func (s *Store) shadowColumn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shadowed != nil
}

// SetShadow attaches the comparison of webhook's review uid to its entry.
// It usually comes first (the comparison is made before the answer is
// sent): it then waits for the review, whose entry shows sh.Answer. Once
// the entry is kept, only the comparison is added, and the open pages are
// told. It copies sh.Answer.
func (s *Store) SetShadow(webhook, uid string, sh Shadow) {
	o := &shadowOutcome{deployed: sh.Deployed, deployedFailure: sh.DeployedFailure, differences: sh.Differences}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.n - 1; i >= 0; i-- {
		if e := s.ring[(s.start+i)%s.keep]; e.uid == uid && e.webhook == webhook && e.late == "" {
			e.shadow = o
			s.nextID++
			e.seq = s.nextID
			s.wake()
			return
		}
	}
	if s.waiting == nil {
		s.waiting = map[string]Shadow{}
	}
	key := webhook + "\x00" + uid
	if _, ok := s.waiting[key]; !ok {
		s.waitOrder = append(s.waitOrder, key)
	}
	sh.Answer = append([]byte(nil), sh.Answer...)
	s.waiting[key] = sh
	for len(s.waitOrder) > maxShadowWaiting {
		delete(s.waiting, s.waitOrder[0])
		s.waitOrder = s.waitOrder[1:]
	}
}

// claimShadow takes the comparison waiting for x, and puts your webhook's
// answer in x. Called with s.mu held.
func (s *Store) claimShadow(x *admissionhttp.Served) *shadowOutcome {
	key := x.Webhook + "\x00" + x.UID
	sh, ok := s.waiting[key]
	if !ok {
		return nil
	}
	delete(s.waiting, key)
	for i, k := range s.waitOrder {
		if k == key {
			s.waitOrder = append(s.waitOrder[:i], s.waitOrder[i+1:]...)
			break
		}
	}
	x.Answer, x.Failure = sh.Answer, sh.Failure
	return &shadowOutcome{deployed: sh.Deployed, deployedFailure: sh.DeployedFailure, differences: sh.Differences, yours: true}
}

// shadowOf is e's column state and text; "" when the list has no column.
func (e *entry) shadowOf() (state, text string, o *shadowOutcome) {
	s := e.store
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.shadowed == nil:
		return "", "", nil
	case e.shadow != nil:
		state, text = e.shadow.state()
		return state, text, e.shadow
	case !s.shadowed[e.webhook] || e.late != "":
		return shadowNone, "–", nil
	}
	return ShadowPending, ShadowPending, nil
}
