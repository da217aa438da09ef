//go:build tools

// Package kubeenv pins the Kubernetes API server and etcd that Flotilla's tests and demo run.
// The build tag keeps these imports out of every normal build; `go build` of the two main
// packages below is what produces bin/kube-apiserver and bin/etcd.
package kubeenv

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
