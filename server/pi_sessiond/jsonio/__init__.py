"""JSON helpers every layer may use: deep documents without recursion, exact text of numbers."""
