// Package compileserver is kcache's per-user compile server for CUDA cold
// misses (`kcache serve`) and its client.
//
// NVRTC's precompiled headers live in one process: its PCH heap sits at an
// address fixed for the process, and NVRTC refuses a PCH file written by
// another one. A build that misses every tier of the cache in a short-lived
// process therefore parses its headers again each time. The server is the
// long-lived process that keeps NVRTC's automatic PCH warm across clients:
// a client sends the compile (source, in-memory headers, options, name
// expressions) together with every file its key was computed from, by
// location and digest; the server checks each of them and compiles only if
// all are as the key saw them, so it never builds from other bytes.
//
// The package knows nothing of NVRTC: the server compiles through the
// Compiler interface (package cuda provides the real one), so the
// protocol, the lifecycle, the fallbacks, the credential check and the
// staleness check are tested without a GPU.
//
// The server listens on a Unix socket in the user's runtime directory (see
// SocketPath), mode 0600, and refuses connections from other users by
// their peer credentials (SO_PEERCRED). NVRTC's PCH heap is one per
// process and NVRTC serialises the compiles that use it, so `kcache serve`
// compiles in a Pool of worker processes (its own binary, `serve
// --worker`), each with its own NVRTC and PCH, each compile in the
// client's working directory, so relative -I options and program paths
// resolve as they would in the client; a request goes to a worker that
// holds its headers' PCH. (A Server over any other Compiler compiles in
// its own process and changes its working directory per compile.)
// Requests beyond a bounded queue, or that wait past the client's bound,
// are answered busy, and the client compiles itself.
//
// A client may send its compile before it knows its key
// (Request.FilesLater, Client.Begin): the server compiles while the
// client scans its headers, and answers once the key's files came and
// were found unchanged since before the compile began.
//
// It knows no kcache key and no tier either: a request carries the
// compile and the files to check, and the answer is the compiler's output,
// which the client's caller stores. From the module it imports only
// internal/wire, whose decoder reads its frames' payloads.
package compileserver
