package keyparts

// ResetOpenCLDriver forgets the driver found, for a benchmark that
// measures finding it.
func ResetOpenCLDriver() {
	loadedDriver.mu.Lock()
	loadedDriver.d = Driver{}
	loadedDriver.prefetch = nil
	loadedDriver.prefetches = 0
	loadedDriver.mu.Unlock()
}
