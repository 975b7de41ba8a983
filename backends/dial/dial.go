// Package dial opens a backend from a URL, for programs that take their
// backend as a flag or an environment variable. It knows one scheme of its
// own, memory (a new in-process backend, one process only; "memory://" is
// memory too); every other scheme is registered, the way database/sql
// drivers are, by an opener package that a program imports for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/redis/redisdial"
//
//	redis://host:port[/db]              backends/redis/redisdial
//	etcd://host:port[,host:port…]       backends/etcd/etcddial
//	zk://host:port[,host:port…][/root]  backends/zookeeper/zkdial
//	postgres://[user[:password]@]host:port/db[?param=value…]
//	                                    backends/postgres/pgdial (postgresql:// too)
//	mysql://user[:password]@host:port/db[?param=value…]
//	                                    backends/mysql/mysqldial (mariadb:// too)
//	nats://host:port[,host:port…][/bucket]
//	                                    backends/nats/natsdial
//	consul://host:port[/prefix]
//	                                    backends/consul/consuldial
//	mongodb://[user[:password]@]host:port[,host:port…][/db][?option=value…]
//	                                    backends/mongodb/mongodial
//	dynamodb://[keyID:secret@]host:port[/table][?region=…&tls=true]
//	                                    backends/dynamodb/dynamodial
//	k8s:///?kubeconfig=path&namespace=ns
//	                                    backends/kubernetes/k8sdial (kubernetes:// too)
//
// Package backends/dial/all imports every one of them. A program links the
// clients of the schemes it imports and no other: this package imports no
// store client.
//
// Schemes are case-insensitive, as in any URL. Parse checks a URL without
// connecting; every error it returns matches ErrURL and names the wrong
// part. Usage lists the schemes a program can open.
//
// Open connects, waits until the server answers (at most the dial timeout,
// WithTimeout, default 5 s), and returns the backend with a function that
// closes the client it made. If the server does not answer in time, Open
// fails with one line naming the URL and the cause, matching
// ErrUnreachable. The clients' own log lines go to WithLogger's logger at
// debug level (by default nowhere), never to stderr. Programs that build
// their own clients (TLS, auth, pool sizes) should call the backend
// packages' New instead.
//
// An opener package implements Opener and calls Register from its init;
// Hosts, HostsOf, Dialer and Unreachable are the parts the built-in
// openers share.
package dial

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	// ErrURL is matched by every error about a malformed backend URL.
	ErrURL = errors.New("dial: bad backend URL")
	// ErrUnreachable is matched by the errors of Open when the server did
	// not answer within the dial timeout (or before ctx ended).
	ErrUnreachable = errors.New("dial: cannot reach")
)

// openerPackages name the package that registers each scheme of this
// module, for the error about a scheme a program did not import.
var openerPackages = map[string]string{
	"redis":      "backends/redis/redisdial",
	"etcd":       "backends/etcd/etcddial",
	"zk":         "backends/zookeeper/zkdial",
	"postgres":   "backends/postgres/pgdial",
	"postgresql": "backends/postgres/pgdial",
	"mysql":      "backends/mysql/mysqldial",
	"mariadb":    "backends/mysql/mysqldial",
	"nats":       "backends/nats/natsdial",
	"dynamodb":   "backends/dynamodb/dynamodial",
	"mongodb":    "backends/mongodb/mongodial",
	"consul":     "backends/consul/consuldial",
	"k8s":        "backends/kubernetes/k8sdial",
	"kubernetes": "backends/kubernetes/k8sdial",
}

// Usage lists the URLs a program can open, memory and the registered
// schemes (each as the opener's Usage says, or as scheme://…), for help
// texts: "memory | redis://host:port[/db] | …".
func Usage() string {
	u := []string{"memory"}
	for _, s := range Schemes() {
		o, _ := opener(s)
		if us, ok := o.(Usager); ok {
			if form := us.Usage(s); form != "" {
				u = append(u, form)
			}
		} else {
			u = append(u, s+"://…")
		}
	}
	return strings.Join(u, " | ")
}

// maxMessage is the longest message of an opener's Check or Describe that
// Parse shows.
const maxMessage = 200

// Target is a parsed backend URL. Its exported fields are what the
// scheme's opener says the URL names (see Describer), for programs that
// reach the same store with a client of their own; they are empty for an
// opener that does not say.
type Target struct {
	// Scheme is "memory" or the registered scheme, in lower case, in the
	// form the opener gives (postgres:// for postgresql://, mysql:// for
	// mariadb://).
	Scheme string
	// Hosts are the servers, host:port each; none for memory.
	Hosts []string
	// DB is the Redis database number.
	DB int
	// Root is the ZooKeeper path under which locks live, or Consul's KV
	// prefix (ending in '/'); empty for the backend's default.
	Root string
	// Bucket is the NATS KV bucket; empty for the backend's default.
	Bucket string
	// DSN is the whole PostgreSQL URL, user, password and parameters
	// included, as pgx takes it; for MySQL, the mysql:// URL.
	DSN string

	raw    string // the URL of a registered scheme, as given
	opener Opener // the registered scheme's opener; nil for memory
}

// Parse checks raw and returns what it names, without connecting.
func Parse(raw string) (Target, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrURL, shown(raw), fmt.Sprintf(format, args...))
	}
	if raw == "" {
		return Target{}, fmt.Errorf("%w: empty: write memory (this process only)%s", ErrURL, orOthers())
	}
	if strings.EqualFold(raw, "memory") {
		return Target{Scheme: "memory"}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which would show a password
		}
		return Target{}, bad("%v", err)
	}
	o, err := opener(u.Scheme)
	switch {
	case err != nil:
		return Target{}, err
	case o != nil:
		t, err := describe(o, u)
		if err != nil {
			return Target{}, bad("%s", clip(err.Error()))
		}
		t.raw, t.opener = raw, o
		return t, nil
	case u.Scheme == "memory":
		if u.Host != "" || u.Path != "" || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return Target{}, bad("the memory backend takes no host, path or options: write memory")
		}
		return Target{Scheme: "memory"}, nil
	case u.Scheme == "":
		return Target{}, bad("no scheme: write memory%s", orOthers())
	case openerPackages[u.Scheme] != "":
		return Target{}, bad("scheme %q is not registered: import _ %q", u.Scheme, "github.com/hustings/hustings/"+openerPackages[u.Scheme])
	}
	return Target{}, bad("scheme %q is not one of %s", u.Scheme, strings.Join(append([]string{"memory"}, Schemes()...), ", "))
}

// describe returns what u names, by o's Describe or, without one, o's
// Check and u's scheme.
func describe(o Opener, u *url.URL) (Target, error) {
	if d, ok := o.(Describer); ok {
		t, err := d.Describe(u)
		if err == nil && t.Scheme == "" {
			t.Scheme = u.Scheme
		}
		return t, err
	}
	return Target{Scheme: u.Scheme}, o.Check(u)
}

// orOthers lists the registered schemes for the errors about a URL
// without one.
func orOthers() string {
	s := Schemes()
	if len(s) == 0 {
		return " (no other scheme is registered: import an opener such as github.com/hustings/hustings/backends/redis/redisdial)"
	}
	for i := range s {
		s[i] += "://"
	}
	if len(s) == 1 {
		return ", or " + s[0] + "…"
	}
	return ", or one of " + strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1] + "…"
}

// clip bounds an opener's message: it names a part of a URL, which may be
// long.
func clip(msg string) string {
	msg = strings.ReplaceAll(msg, "\n", " ")
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// shown quotes s for an error message: user info (which may hold a
// password) elided, and at most 80 bytes.
func shown(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		auth := s[i+3:]
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			s = s[:i+3] + "…@" + s[i+3+at+1:]
		}
	}
	const limit = 80
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
	}
	return strconv.Quote(s)
}

// Redacted returns String with a password replaced by "xxxxx", for
// messages.
func (t Target) Redacted() string {
	if u, err := url.Parse(t.String()); err == nil {
		return u.Redacted()
	}
	return t.String()
}

// String returns the target as a URL that Parse accepts: the URL Parse
// was given (with its password, if any: see Redacted), or for a Target
// made by hand, one of its fields.
func (t Target) String() string {
	switch {
	case t.raw != "":
		return t.raw
	case t.Scheme == "memory":
		return "memory"
	case t.DSN != "":
		return t.DSN
	}
	path := t.Root
	if t.Bucket != "" {
		path = "/" + t.Bucket
	} else if t.DB != 0 {
		path = "/" + strconv.Itoa(t.DB)
	}
	u := url.URL{Scheme: t.Scheme, Host: strings.Join(slices.Clip(t.Hosts), ","), Path: path}
	return u.String()
}
