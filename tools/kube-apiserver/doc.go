// Package kubeapiserver holds no code. Its module builds kube-apiserver
// for the tests of the Kubernetes backend (build.sh, run by `make
// kube-apiserver`), apart from the library's module so that no user of
// Hustings downloads Kubernetes; its test holds the module's pins to
// Kubernetes' own.
package kubeapiserver
