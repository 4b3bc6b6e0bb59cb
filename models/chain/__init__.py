"""Serial MDH chains (Khalil-Kleinfinger): Model/Data, kinematics, dynamics, the BIP leg's closed forms."""
