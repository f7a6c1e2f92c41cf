package report

import "io"

// FormatSARIF is SARIF 2.1.0, what GitHub code scanning reads.
const FormatSARIF = "sarif"

// SARIFer is a report that can be written as a SARIF log.
type SARIFer interface {
	SARIF() SARIF
}

var sarifFormat = Format{
	Name:     FormatSARIF,
	Supports: func(v any) bool { _, ok := v.(SARIFer); return ok },
	Write:    func(w io.Writer, v any) error { return JSON(w, v.(SARIFer).SARIF()) },
}

// SARIF is a SARIF 2.1.0 log (https://docs.oasis-open.org/sarif/sarif/v2.1.0/):
// the part of it GitHub code scanning reads, one run per tool.
type SARIF struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []SARIFRun `json:"runs"`
}

// NewSARIF is a log with one run of the tool named name.
func NewSARIF(name, version, infoURI string) SARIF {
	return SARIF{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []SARIFRun{{Tool: SARIFTool{Driver: SARIFDriver{Name: name, Version: version, InformationURI: infoURI}}, Results: []SARIFResult{}}},
	}
}

// SARIFRun is one run of a tool.
type SARIFRun struct {
	Tool    SARIFTool     `json:"tool"`
	Results []SARIFResult `json:"results"`
}

// SARIFTool names the tool.
type SARIFTool struct {
	Driver SARIFDriver `json:"driver"`
}

// SARIFDriver is the tool and its rules.
type SARIFDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []SARIFRule `json:"rules,omitempty"`
}

// SARIFRule is one rule results refer to by ID.
type SARIFRule struct {
	ID                   string            `json:"id"`
	ShortDescription     SARIFText         `json:"shortDescription"`
	HelpURI              string            `json:"helpUri,omitempty"`
	DefaultConfiguration *SARIFRuleDefault `json:"defaultConfiguration,omitempty"`
}

// SARIFRuleDefault is a rule's level unless a result says otherwise.
type SARIFRuleDefault struct {
	Level string `json:"level"`
}

// SARIFText is a message.
type SARIFText struct {
	Text string `json:"text"`
}

// The result levels.
const (
	SARIFError   = "error"
	SARIFWarning = "warning"
	SARIFNote    = "note"
)

// SARIFResult is one finding.
type SARIFResult struct {
	RuleID       string             `json:"ruleId"`
	Level        string             `json:"level"`
	Message      SARIFText          `json:"message"`
	Locations    []SARIFLocation    `json:"locations,omitempty"`
	Suppressions []SARIFSuppression `json:"suppressions,omitempty"`
	// Properties carries what SARIF has no field for (a fix as a JSON
	// patch, a field path).
	Properties map[string]any `json:"properties,omitempty"`
}

// SARIFLocation is where a result is: a file and line, and the logical
// name of the object.
type SARIFLocation struct {
	PhysicalLocation *SARIFPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []SARIFLogical `json:"logicalLocations,omitempty"`
}

// SARIFPhysical is a file, and a line when known.
type SARIFPhysical struct {
	ArtifactLocation SARIFArtifact `json:"artifactLocation"`
	Region           *SARIFRegion  `json:"region,omitempty"`
}

// SARIFArtifact is a file, relative to the repository root where possible.
type SARIFArtifact struct {
	URI string `json:"uri"`
}

// SARIFRegion is a line, 1-based.
type SARIFRegion struct {
	StartLine int `json:"startLine"`
}

// SARIFLogical is an object and field: "ValidatingWebhookConfiguration/x".
type SARIFLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind,omitempty"`
}

// SARIFSuppression is a result silenced in the source, with why.
type SARIFSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification,omitempty"`
}
