package admissionhttp

// reviewFrameBytes is growStack's frame: with what is already on the stack
// when ServeHTTP starts, the runtime grows it once to 16 KB, the largest
// size it keeps cached per CPU, which is enough for a review's whole path
// (BenchmarkPodSidecar/.../goroutine-per-request: a larger frame was no
// faster).
const reviewFrameBytes = 8 << 10

// stackIndex is never written: indexing with it keeps growStack's frame
// from being optimized away.
var stackIndex int

// growStack makes the calling goroutine's stack big enough for the whole
// review at once, while the stack is still shallow. net/http serves every
// HTTP/2 request on a new goroutine with a small stack, which the JSON
// decoders' recursion then outgrows several times over; each growth copies
// the stack and walks every frame on it through the binary's unwind tables.
// In a process that sat idle between the apiserver's calls (a developer's
// webhook, its caches cold) those walks were half the review's decode
// (bench/JOURNAL.md, "Cold calls"). One early growth, over a few frames, is cheap.
// CockroachDB's util/growstack does the same for its RPC handlers.
//
//go:noinline
func growStack() byte {
	var frame [reviewFrameBytes]byte
	return frame[stackIndex]
}
