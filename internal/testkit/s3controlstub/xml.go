package s3controlstub

import (
	"encoding/xml"
	"time"
)

const xmlns = "http://awss3control.amazonaws.com/doc/2018-08-20/"

type anyElem struct{ XMLName xml.Name }

type checksumOp struct {
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

type operationXML struct {
	S3ComputeObjectChecksum *checksumOp `xml:"S3ComputeObjectChecksum,omitempty"`
	Others                  []anyElem   `xml:",any"`
}

type reportXML struct {
	Bucket      string `xml:"Bucket,omitempty"`
	Format      string `xml:"Format,omitempty"`
	Enabled     bool   `xml:"Enabled"`
	Prefix      string `xml:"Prefix,omitempty"`
	ReportScope string `xml:"ReportScope,omitempty"`
}

type manifestXML struct {
	Spec struct {
		Format string   `xml:"Format"`
		Fields []string `xml:"Fields>member"`
	} `xml:"Spec"`
	Location struct {
		ObjectArn       string `xml:"ObjectArn"`
		ObjectVersionID string `xml:"ObjectVersionId,omitempty"`
		ETag            string `xml:"ETag"`
	} `xml:"Location"`
}

type createJobRequest struct {
	XMLName              xml.Name     `xml:"CreateJobRequest"`
	ConfirmationRequired *bool        `xml:"ConfirmationRequired"`
	Operation            operationXML `xml:"Operation"`
	Report               *reportXML   `xml:"Report"`
	ClientRequestToken   string       `xml:"ClientRequestToken"`
	Manifest             *manifestXML `xml:"Manifest"`
	ManifestGenerator    *anyElem     `xml:"ManifestGenerator"`
	Description          string       `xml:"Description"`
	Priority             *int32       `xml:"Priority"`
	RoleArn              string       `xml:"RoleArn"`
}

type createJobResult struct {
	XMLName xml.Name `xml:"CreateJobResult"`
	Xmlns   string   `xml:"xmlns,attr"`
	JobID   string   `xml:"JobId"`
}

type timers struct {
	ElapsedTimeInActiveSeconds int64 `xml:"ElapsedTimeInActiveSeconds"`
}

type progressXML struct {
	TotalNumberOfTasks     int64  `xml:"TotalNumberOfTasks"`
	NumberOfTasksSucceeded int64  `xml:"NumberOfTasksSucceeded"`
	NumberOfTasksFailed    int64  `xml:"NumberOfTasksFailed"`
	Timers                 timers `xml:"Timers"`
}

type failureXML struct {
	FailureCode   string `xml:"FailureCode"`
	FailureReason string `xml:"FailureReason"`
}

type jobDescriptor struct {
	JobID                string       `xml:"JobId"`
	ConfirmationRequired bool         `xml:"ConfirmationRequired"`
	Description          string       `xml:"Description,omitempty"`
	JobArn               string       `xml:"JobArn"`
	Status               string       `xml:"Status"`
	Manifest             manifestXML  `xml:"Manifest"`
	Operation            operationXML `xml:"Operation"`
	Priority             int32        `xml:"Priority"`
	ProgressSummary      progressXML  `xml:"ProgressSummary"`
	StatusUpdateReason   string       `xml:"StatusUpdateReason,omitempty"`
	FailureReasons       []failureXML `xml:"FailureReasons>member,omitempty"`
	Report               reportXML    `xml:"Report"`
	CreationTime         string       `xml:"CreationTime"`
	TerminationDate      string       `xml:"TerminationDate,omitempty"`
	RoleArn              string       `xml:"RoleArn"`
	SuspendedDate        string       `xml:"SuspendedDate,omitempty"`
	SuspendedCause       string       `xml:"SuspendedCause,omitempty"`
}

type describeJobResult struct {
	XMLName xml.Name      `xml:"DescribeJobResult"`
	Xmlns   string        `xml:"xmlns,attr"`
	Job     jobDescriptor `xml:"Job"`
}

type jobListDescriptor struct {
	JobID           string      `xml:"JobId"`
	Description     string      `xml:"Description,omitempty"`
	Operation       string      `xml:"Operation"`
	Priority        int32       `xml:"Priority"`
	Status          string      `xml:"Status"`
	CreationTime    string      `xml:"CreationTime"`
	TerminationDate string      `xml:"TerminationDate,omitempty"`
	ProgressSummary progressXML `xml:"ProgressSummary"`
}

type listJobsResult struct {
	XMLName   xml.Name            `xml:"ListJobsResult"`
	Xmlns     string              `xml:"xmlns,attr"`
	NextToken string              `xml:"NextToken,omitempty"`
	Jobs      []jobListDescriptor `xml:"Jobs>member"`
}

type updateJobStatusResult struct {
	XMLName            xml.Name `xml:"UpdateJobStatusResult"`
	Xmlns              string   `xml:"xmlns,attr"`
	JobID              string   `xml:"JobId"`
	Status             string   `xml:"Status"`
	StatusUpdateReason string   `xml:"StatusUpdateReason,omitempty"`
}

type errorResponse struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Error     errorXML `xml:"Error"`
	RequestID string   `xml:"RequestId"`
}

type errorXML struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
