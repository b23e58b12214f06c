// Package keyparts computes the parts of a kcache key that describe the
// machine rather than the program: an OpenCL device's and driver's
// identity, the file identity of the libraries that compile, the compiler
// environment, and the dependency scanner's input for OpenCL C.
//
// The OpenCL binding (package opencl), the OpenCL layer and the CUDA
// binding each query these values through handles of their own; they hand
// the values here, so that one rule makes each part and the layer and the
// binding cannot drift apart on the same device.
//
// It makes no OpenCL or CUDA call and knows no tier: it computes from the
// values handed to it and from the files it names. Within the module it
// imports the root package (the key's types) and deps (the scanner's
// Input).
package keyparts
