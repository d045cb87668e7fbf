package etcdstore

import "google.golang.org/grpc"

// WithDialOptions is o with opts given to every member's client.
func WithDialOptions(o Options, opts ...grpc.DialOption) Options {
	o.dialOptions = opts
	return o
}
