print("reach-modem-sim: under construction")
