// Package main stands for a kubebuilder project's manager: project mode
// only looks for the file.
package main

func main() {}
