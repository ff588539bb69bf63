"""How the record is shown: the table model the CLI, the report and the viewer share, the HTML
report and its charts, transcripts, exports."""
