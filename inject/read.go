package inject

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// splitDocuments splits a YAML stream into documents with apimachinery's
// YAML reader, the one kubectl's resource builder uses: a separator line is
// "---", optionally followed by a comment. Documents holding only
// whitespace and comments are dropped later, when they decode to null.
func splitDocuments(r io.Reader) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read documents: %w", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
