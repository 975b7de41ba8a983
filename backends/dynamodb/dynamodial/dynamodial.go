// Package dynamodial registers the URL scheme dynamodb:// with package
// dial, so that dial.Open opens a DynamoDB backend (package
// backends/dynamodb) on a client of its own. Import it for its side
// effect:
//
//	import _ "github.com/hustings/hustings/backends/dynamodb/dynamodial"
//
// The URL names the endpoint and, as its path, the table
// (dynamodb.WithTable; default the backend's):
//
//	dynamodb://[key:secret@]host:port[/table][?region=r&tls=true]
//
// The endpoint is http://host:port (DynamoDB Local, dynalite), or
// https:// with tls=true or port 443 (dynamodb://dynamodb.eu-west-1.amazonaws.com:443/t).
// The region is the region parameter, else $AWS_REGION, else
// $AWS_DEFAULT_REGION, else us-east-1. The credentials are the URL's
// user info (an access key and its secret), else $AWS_ACCESS_KEY_ID,
// $AWS_SECRET_ACCESS_KEY and $AWS_SESSION_TOKEN, else the static pair
// hustings:hustings, which local servers accept (they check that a
// request is signed, not by whom). A program that needs roles, profiles
// or SSO builds its client with the SDK's config and calls dynamodb.New.
// Every request is bounded by the dial timeout; the SDK retries as it
// does by default. Open runs dynamodb.Migrate (idempotent): the table is
// made on first use.
package dynamodial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdk "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dynamodb"
	"github.com/hustings/hustings/backends/internal/record"
)

// The errors of Register are recorded by dial, which refuses the scheme
// at Parse: nothing to do with them here.
func init() { _ = dial.Register("dynamodb", opener{}) }

// opener opens dynamodb:// URLs.
type opener struct{}

func (opener) Usage(string) string { return "dynamodb://host:port[/table]" }

func (opener) Check(u *url.URL) error {
	_, err := describe(u)
	return err
}

func (opener) Describe(u *url.URL) (dial.Target, error) { return describe(u) }

// params are the query parameters a dynamodb:// URL takes.
var params = map[string]bool{"region": true, "tls": true}

func describe(u *url.URL) (dial.Target, error) {
	switch {
	case u.Opaque != "":
		return dial.Target{}, fmt.Errorf("no // after %q: write dynamodb://host:port[/table]", u.Scheme+":")
	case u.Fragment != "":
		return dial.Target{}, errors.New("fragments are not supported")
	case u.User != nil && u.User.Username() == "":
		return dial.Target{}, errors.New("an empty access key (write the access key and its secret as the user info)")
	}
	if u.User != nil {
		if _, ok := u.User.Password(); !ok {
			return dial.Target{}, errors.New("an access key ID and no password (write the key ID as the user, the key as the password)")
		}
	}
	for k, v := range u.Query() {
		if !params[k] {
			return dial.Target{}, fmt.Errorf("unknown parameter %q (region and tls are known)", k)
		}
		if k == "tls" && v[0] != "true" && v[0] != "false" {
			return dial.Target{}, fmt.Errorf("tls=%q: want true or false", v[0])
		}
	}
	hs, err := dial.Hosts(u.Host)
	if err != nil {
		return dial.Target{}, err
	}
	if len(hs) != 1 {
		return dial.Target{}, errors.New("one host:port only")
	}
	table := strings.Trim(u.Path, "/")
	if table != "" {
		if _, err := dynamodb.New(sdk.New(sdk.Options{}), dynamodb.WithTable(table)); err != nil {
			return dial.Target{}, fmt.Errorf("table %q: 3 to 255 letters, digits, '_', '-' or '.'", table)
		}
	}
	return dial.Target{Scheme: "dynamodb", Hosts: hs, Bucket: table, DSN: endpoint(u)}, nil
}

// endpoint is the URL's endpoint: https with tls=true or port 443, else
// http.
func endpoint(u *url.URL) string {
	scheme := "http"
	if _, port, _ := net.SplitHostPort(u.Host); port == "443" || u.Query().Get("tls") == "true" {
		scheme = "https"
	}
	return scheme + "://" + u.Host
}

func region(u *url.URL) string {
	for _, r := range []string{u.Query().Get("region"), os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	return "us-east-1"
}

func creds(u *url.URL) aws.CredentialsProvider {
	if u.User != nil {
		secret, _ := u.User.Password()
		return credentials.NewStaticCredentialsProvider(u.User.Username(), secret, "")
	}
	if k, s := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); k != "" && s != "" {
		return credentials.NewStaticCredentialsProvider(k, s, os.Getenv("AWS_SESSION_TOKEN"))
	}
	return credentials.NewStaticCredentialsProvider("hustings", "hustings", "")
}

func (opener) Open(ctx context.Context, u *url.URL, c dial.Config) (backends.Backend, func(), error) {
	shown := u.Redacted()
	t, err := describe(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %v", dial.ErrURL, shown, err)
	}
	client := sdk.New(sdk.Options{
		Region:       region(u),
		BaseEndpoint: aws.String(t.DSN),
		Credentials:  creds(u),
		HTTPClient:   &http.Client{Timeout: c.Timeout},
	})
	var opts []dynamodb.Option
	if t.Bucket != "" {
		opts = append(opts, dynamodb.WithTable(t.Bucket))
	}
	if err := dynamodb.Migrate(ctx, client, opts...); err != nil {
		if errors.Is(err, backends.ErrUnavailable) {
			return nil, nil, dial.Unreachable(ctx, c, shown, nil, err)
		}
		return nil, nil, fmt.Errorf("dial: %s: %w", shown, err)
	}
	b, err := dynamodb.New(client, opts...)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { record.WaitBounded(b.Store) }, nil
}
