// Package fleet is the server's store of the fleet inventory: the current
// report of every machine (what internal/core/inventory defines and
// validates, and what clients send), indexed by plugin so that "who has
// X" reads only X's machines, with each plugin's counts and each token's
// usage against its quota. It keeps everything in a store.Store (bbolt or
// etcd), so that every replica over one store sees the same fleet; its
// contract test runs on both.
package fleet
