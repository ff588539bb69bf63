"""The pages a person plays a human seat on: a front door, like the viewer, that reads a seat's
day and takes its form, and reads and writes nothing else."""
