// Package mongodial registers the URL scheme mongodb:// with package
// dial, so that dial.Open opens a MongoDB backend (package
// backends/mongodb) on a client of its own. Import it for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/mongodb/mongodial"
//
// The URL is MongoDB's connection string, passed to the driver as it is
// (users, hosts, replicaSet, w=majority and every other option of
// go.mongodb.org/mongo-driver/v2); its path names the database, default
// "hustings":
//
//	mongodb://[user[:password]@]host:port[,host:port…][/db][?option=value…]
//
// Open waits until a server answers a ping (the driver's connect and
// server-selection timeouts are Open's) and runs mongodb.EnsureIndexes
// (idempotent). The client is disconnected by the close function Open
// returns.
package mongodial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/internal/record"
	"github.com/hustings/hustings/backends/mongodb"
)

// DefaultDatabase is the database of a URL with no path.
const DefaultDatabase = "hustings"

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("mongodb", opener{}) }

// opener opens mongodb:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "mongodb://host:port[/db]" }

func (opener) Check(u *url.URL) error {
	_, _, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) {
	t, _, err := describe(u)
	return t, err
}

// describe checks a mongodb:// URL and returns its target and database.
func describe(u *url.URL) (dial.Target, string, error) {
	switch {
	case u.Opaque != "":
		return dial.Target{}, "", fmt.Errorf("no // after %q: write mongodb://host:port[/db]", u.Scheme+":")
	case u.Fragment != "":
		return dial.Target{}, "", errors.New("fragments are not supported")
	}
	db := strings.Trim(u.Path, "/")
	if db == "" {
		db = DefaultDatabase
	}
	if strings.Contains(db, "/") {
		return dial.Target{}, "", errors.New("one database only: write mongodb://host:port/db")
	}
	hs, err := dial.Hosts(u.Host)
	if err != nil {
		return dial.Target{}, "", err
	}
	m := *u
	m.Scheme = "mongodb"
	if _, err := connstring.ParseAndValidate(m.String()); err != nil {
		msg := err.Error()
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "…")
		}
		return dial.Target{}, "", errors.New("not a MongoDB connection string: " + msg)
	}
	return dial.Target{Scheme: "mongodb", Hosts: hs, DSN: m.String()}, db, nil
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	t, db, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	d := &dial.Dialer{Dialer: net.Dialer{Timeout: c.Timeout}} // the driver hides why it never connected
	client, err := mongo.Connect(options.Client().ApplyURI(t.DSN).SetDialer(d).
		SetConnectTimeout(c.Timeout).SetServerSelectionTimeout(c.Timeout))
	if err != nil {
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	disconnect := func() { _ = client.Disconnect(context.Background()) }
	if err := client.Ping(ctx, readpref.Primary()); err != nil {
		disconnect()
		var se mongo.ServerError
		if errors.As(err, &se) { // the server answered, with an error
			return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
		}
		return nil, nil, dial.Unreachable(ctx, c, shown, d.LastErr(), err)
	}
	if err := mongodb.EnsureIndexes(ctx, client, db); err != nil {
		disconnect()
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := mongodb.New(client, db)
	if err != nil {
		disconnect()
		return nil, nil, err
	}
	return b, func() { disconnect(); record.WaitBounded(b.Store) }, nil
}
