// goread: reads every regular file under DIR in one goroutine, in the sorted order of
// filepath.WalkDir, with plain reads of 64 KiB, and prints the count, the total size and a
// FNV-1a checksum of everything read (the C readers' format). It stands for Go programs whose
// reads go through the Go runtime's own system calls and scheduler threads.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

const offsetBasis = 0xcbf29ce484222325
const prime = 0x100000001b3

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goread DIR")
		os.Exit(2)
	}
	var files, bytes uint64
	sum := uint64(offsetBasis)
	buf := make([]byte, 64*1024)
	err := filepath.WalkDir(os.Args[1], func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			n, err := f.Read(buf)
			for _, b := range buf[:n] {
				sum = (sum ^ uint64(b)) * prime
			}
			bytes += uint64(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
		files++
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goread:", err)
		os.Exit(1)
	}
	fmt.Printf("files %d bytes %d checksum %016x\n", files, bytes, sum)
}
