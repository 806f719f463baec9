"""A module of a user's with a syntax error (tests/ppo_env/gymnasium_env_test.cpp): the run is refused
naming the file and the line."""
import gymnasium


class Broken(gymnasium.Env:
    pass
