// Package nats keeps Hustings locks in a NATS JetStream key-value bucket.
package nats
