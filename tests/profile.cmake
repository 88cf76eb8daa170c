# Profiler tests (issue 5): they come with the profiler.
