package kubeapiserver

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// modFile is the part of `go mod edit -json` the test reads.
type modFile struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path, Version string }
	}
}

// TestPinsAreKubernetes: every staging module Kubernetes requires at
// v0.0.0 is replaced by its release of the same minor version, and every
// other module this one requires is at the version Kubernetes requires
// (a `go get` here would upgrade grpc or otel beneath it).
func TestPinsAreKubernetes(t *testing.T) {
	ours := edit(t)
	version := ""
	for _, r := range ours.Require {
		if r.Path == "k8s.io/kubernetes" {
			version = r.Version
		}
	}
	if !strings.HasPrefix(version, "v1.") {
		t.Fatalf("go.mod requires k8s.io/kubernetes %q, want v1.x.y", version)
	}
	staging := "v0." + strings.TrimPrefix(version, "v1.")
	theirs := edit(t, kubernetesMod(t, version))

	replaced := map[string]string{}
	for _, r := range ours.Replace {
		if r.New.Path != r.Old.Path {
			t.Errorf("replace %s => %s: want the same module's release", r.Old.Path, r.New.Path)
		}
		replaced[r.Old.Path] = r.New.Version
	}
	pinned := map[string]string{}
	for _, r := range theirs.Require {
		if r.Version != "v0.0.0" {
			pinned[r.Path] = r.Version
			continue
		}
		if got := replaced[r.Path]; got != staging {
			t.Errorf("%s (a staging module) is replaced with %q, want %s", r.Path, got, staging)
		}
		delete(replaced, r.Path)
	}
	for path := range replaced {
		t.Errorf("%s is replaced, but Kubernetes does not require it at v0.0.0", path)
	}
	for _, r := range ours.Require {
		if want, ok := pinned[r.Path]; ok && r.Version != want {
			t.Errorf("go.mod requires %s %s, Kubernetes %s requires %s", r.Path, r.Version, version, want)
		}
	}
}

// edit returns `go mod edit -json` of this module's go.mod, or of file.
func edit(t *testing.T, file ...string) modFile {
	t.Helper()
	out, err := exec.Command("go", append([]string{"mod", "edit", "-json"}, file...)...).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %v: %v", file, err)
	}
	var m modFile
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// kubernetesMod returns the path of k8s.io/kubernetes's go.mod at version,
// in the module cache (downloading it through the proxy if need be).
func kubernetesMod(t *testing.T, version string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %v", version, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil || info.GoMod == "" {
		t.Fatalf("go mod download -json: %v in %s", err, out)
	}
	return info.GoMod
}
