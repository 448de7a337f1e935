"""Forms by area (projects, runs, workspace, adjudication, reports, exports, accounts), named like views/."""
