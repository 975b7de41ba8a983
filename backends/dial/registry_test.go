package dial_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/memory"
)

// memOpener opens an in-process backend for URLs naming no host.
type memOpener struct{ got chan dial.Config }

func (memOpener) Check(u *url.URL) error {
	if u.Host != "" {
		return errors.New("takes no host")
	}
	return nil
}

func (o memOpener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, nil, errors.New("ctx has no dial timeout")
	}
	o.got <- c
	return memory.New(), func() {}, nil
}

func TestRegisteredSchemeOpens(t *testing.T) {
	o := memOpener{got: make(chan dial.Config, 1)}
	if err := dial.Register("Reg-Open", o); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dial.Schemes(), "reg-open") {
		t.Fatalf("Schemes() = %v, want reg-open in it", dial.Schemes())
	}
	if u := dial.Usage(); !strings.HasPrefix(u, "memory | ") || !strings.Contains(u, "reg-open://…") {
		t.Fatalf("Usage() = %q, want memory and reg-open://… (an opener without Usage)", u)
	}
	if _, err := dial.Parse("reg-open://h:1"); !errors.Is(err, dial.ErrURL) || !strings.Contains(err.Error(), "takes no host") {
		t.Fatalf("Parse with a host = %v, want a bad-URL error from the opener", err)
	}
	if _, err := dial.Parse("nope://h:1"); err == nil || !strings.Contains(err.Error(), "reg-open") {
		t.Fatalf("Parse of an unknown scheme = %v, want the registered schemes listed", err)
	}
	tg, err := dial.Parse("REG-OPEN:///x")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Scheme != "reg-open" || tg.String() != "REG-OPEN:///x" {
		t.Fatalf("Parse = %+v (%s), want scheme reg-open and the URL as given", tg, tg)
	}
	b, closeFn, err := dial.Open(t.Context(), "reg-open:///x", dial.WithTimeout(3*time.Second))
	if err != nil || b == nil {
		t.Fatalf("Open = %v, %v", b, err)
	}
	defer closeFn()
	if c := <-o.got; c.Timeout != 3*time.Second || c.Logger == nil {
		t.Fatalf("opener got %+v, want the 3s timeout and a logger", c)
	}
}

func TestRegisterRefusesMistakes(t *testing.T) {
	o := memOpener{got: make(chan dial.Config, 1)}
	if err := dial.Register("reg-dup", o); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scheme string
		o      dial.Opener
	}{
		{"reg-dup", o},
		{"REG-DUP", o},
		{"", o},
		{"a:b", o},
		{"memory", o},
		{"MEMORY", o},
		{"reg-nil", nil},
	}
	for _, tt := range tests {
		if err := dial.Register(tt.scheme, tt.o); !errors.Is(err, backends.ErrInvalid) {
			t.Errorf("Register(%q, %v) = %v, want ErrInvalid", tt.scheme, tt.o, err)
		}
	}
	if _, err := dial.Parse("reg-dup:///"); !errors.Is(err, backends.ErrInvalid) || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("Parse of a scheme registered twice = %v, want the duplicate named", err)
	}
	if _, err := dial.Parse("reg-nil:///"); !errors.Is(err, dial.ErrURL) {
		t.Fatalf("Parse of a refused scheme = %v, want ErrURL", err)
	}
}
