print("reach: under construction")
