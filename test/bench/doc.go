// Package bench compares hookback's admission transport with
// controller-runtime's webhook server on the same AdmissionReview and the
// same handler logic. It is its own module so controller-runtime never
// becomes a dependency of hookback itself.
package bench
