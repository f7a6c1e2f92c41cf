// Package plan is what one run of hookback is to do, decided before
// anything is dialled: the Options a user chooses (DefaultOptions, the one
// place start's defaults live, whose fields the CLI's flags bind to),
// Complete, which resolves and validates them into the immutable Config,
// the objects a Config registers at a Placement (Config.Objects: start,
// render, audit, test, and the in-cluster install with a Service
// placement all render through it, so what one prints is what another
// applies), and the permissions and least-privilege RBAC derived from it.
// A Config is plain data: the clients, the policy engine and the chain's
// observers are built and owned by the run that uses it (package session).
package plan
