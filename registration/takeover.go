package registration

// AnnotationTakeOver marks an object that `start --take-over` changed and
// records how (package takeover): it is someone else's object, lent to the
// session, so deleting a session's configurations skips it.
const AnnotationTakeOver = "hookback.dev/take-over"
