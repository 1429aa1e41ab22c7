// Package vocab is sparklet's vocabulary: every label, annotation and env
// name that users and operators see on a pod, and the env contract between
// the webhook and the containers it injects, each with who writes it and
// who reads it. It imports nothing.
package vocab
