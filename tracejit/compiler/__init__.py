"""The compiler: Program passes, fusion into a Plan, memory planning, all run by ``driver.optimize``."""
