package dataset

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// archiveLimits bound what a tarball may unpack to, so a hostile or broken
// tarball that passed the integrity check of a compromised mirror still
// cannot fill the disk.
type archiveLimits struct {
	maxFile  int64 // one entry
	maxTotal int64 // all entries, uncompressed
}

// walkTarball reads a gzipped npm tarball and calls fn for each regular
// file, named relative to the package root (npm's first path element is
// dropped, as npm itself does). It refuses the whole tarball if any entry
// could escape the package directory (absolute names, ".." elements,
// backslashes), is a link, device or other special file, is larger than
// allowed, or appears twice. Entries are never written under their own
// names: callers pick the destination.
func walkTarball(r io.Reader, lim archiveLimits, fn func(name string, body io.Reader) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading tarball: %w", err)
	}
	defer gz.Close()
	total := &cappedReader{r: gz, max: lim.maxTotal}
	tr := tar.NewReader(total)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, tar.ErrInsecurePath) {
				return fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
			}
			return fmt.Errorf("reading tarball: %w", err)
		}
		if err := checkEntryName(hdr.Name); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		default:
			return fmt.Errorf("%w: entry %q has type %q, want a regular file", ErrUnsafeArchive, hdr.Name, string(hdr.Typeflag))
		}
		if hdr.Size > lim.maxFile {
			return fmt.Errorf("%w: entry %q is %d bytes, more than the limit of %d", ErrUnsafeArchive, hdr.Name, hdr.Size, lim.maxFile)
		}
		_, rel, ok := strings.Cut(path.Clean(hdr.Name), "/")
		if !ok {
			continue // outside the package directory; npm ignores these too
		}
		if seen[rel] {
			return fmt.Errorf("%w: entry %q appears twice", ErrUnsafeArchive, hdr.Name)
		}
		seen[rel] = true
		if err := fn(rel, tr); err != nil {
			return err
		}
	}
	if total.err != nil {
		return total.err
	}
	// Reading to the end checks the gzip trailer.
	if _, err := io.Copy(io.Discard, total); err != nil {
		return fmt.Errorf("reading tarball: %w", err)
	}
	return nil
}

func checkEntryName(name string) error {
	bad := name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || strings.ContainsRune(name, 0)
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: entry name %q escapes the package directory", ErrUnsafeArchive, name)
	}
	return nil
}

// cappedReader fails once more than max bytes have been read.
type cappedReader struct {
	r         io.Reader
	max, read int64
	err       error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.read >= c.max {
		// Exactly at the limit is fine: only a further byte is too many.
		var b [1]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return 0, err
		}
		c.err = fmt.Errorf("%w: tarball unpacks to more than the limit of %d bytes", ErrUnsafeArchive, c.max)
		return 0, c.err
	}
	if left := c.max - c.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
