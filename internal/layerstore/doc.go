// Package layerstore is what the OpenCL layer (package main in layer/) and
// its background worker (`kcache layer-worker`) share: the record the layer
// stores per program and device, the build order through which the layer
// leaves the storing of a PoCL program to the worker, the queue of orders
// in the cache directory with its worker lock, and the rules both key a
// build by, so that the worker stores under exactly the key the layer
// looks up, or not at all.
package layerstore
