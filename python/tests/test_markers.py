"""Marker mistakes fail the test instead of being ignored (#36): an unknown keyword names the
closest known one, and a marker on a test that never used the toolstorm fixture says so."""


def test_marker_mistakes_fail_the_test_saying_what_was_ignored(suite):
    suite.makepyfile(
        test_marked="""
        import pytest
        import requests

        DOWN = [{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}]

        @pytest.mark.toolstorm(rule=DOWN)
        def test_a_misspelled_rules(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "a"}, timeout=10).status_code == 201

        @pytest.mark.toolstorm(rules=DOWN)
        def test_never_used_the_fixture(shipping_server):
            assert requests.post(shipping_server.url + "/ship", json={"order": "b"}, timeout=10).status_code == 201

        @pytest.mark.toolstorm_cassette("cassettes/c.jsonl", normalise="ids")
        def test_a_misspelled_normalize(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "c"}, timeout=10).status_code == 201

        @pytest.mark.toolstorm(DOWN, {"seed": 1})
        def test_two_positional_arguments(toolstorm, shipping_server):
            pass

        @pytest.mark.toolstorm(rules=DOWN, seed=7, max_calls=3)
        def test_a_well_formed_marker(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "d"}, timeout=10).status_code == 503
            assert toolstorm.report()["maxCalls"] == 3 and toolstorm.report()["seed"] == 7

        def test_no_marker_no_fixture():
            pass
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=4, passed=2, errors=0)
    result.stdout.fnmatch_lines_random(
        [
            "*toolstorm: @pytest.mark.toolstorm got an unknown keyword 'rule' (did you mean 'rules'?): it would be ignored. It takes rules, seed, require_triggered, max_calls, routes, explore.*",
            "*toolstorm: this test carries @pytest.mark.toolstorm, but it never used the toolstorm fixture, so no rule was set*",
            "*toolstorm: @pytest.mark.toolstorm_cassette got an unknown keyword 'normalise' (did you mean 'normalize'?)*",
            "*toolstorm: @pytest.mark.toolstorm takes one positional argument (rules), got 2*",
            "FAILED test_marked.py::test_a_misspelled_rules*",
            "FAILED test_marked.py::test_never_used_the_fixture*",
            "FAILED test_marked.py::test_a_misspelled_normalize*",
            "FAILED test_marked.py::test_two_positional_arguments*",
        ]
    )
    # The failed test's recording is not kept.
    assert not (suite.path / "cassettes" / "c.jsonl").exists()


def test_a_module_wide_marker_counts_for_every_test_in_the_module(suite):
    suite.makepyfile(
        test_module_marker="""
        import pytest

        pytestmark = pytest.mark.toolstorm(seeed=3)

        def test_uses_it(toolstorm):
            pass
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*unknown keyword 'seeed' (did you mean 'seed'?)*"])


def test_markers_on_a_class_and_its_test_merge_the_closest_keyword_winning(suite):
    # The test's own marker only relaxes require_triggered: the class's rules still apply (they were
    # dropped: the test ran with no fault and passed).
    suite.makepyfile(
        test_merged="""
        import pytest
        import requests

        DOWN = [{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}]
        UP = [{"name": "late", "route": "POST /ship", "kind": "unavailable", "calls": [5]}]

        @pytest.mark.toolstorm(rules=DOWN, seed=3)
        class TestShipping:
            @pytest.mark.toolstorm(require_triggered=False)
            def test_keeps_the_class_rules(self, toolstorm, shipping_server):
                assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "a"}, timeout=10).status_code == 503
                assert toolstorm.report()["seed"] == 3

            @pytest.mark.toolstorm(UP)
            def test_its_own_rules_win(self, toolstorm, shipping_server):
                assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "b"}, timeout=10).status_code == 201

        @pytest.mark.toolstorm(explore=True)
        class TestExplored:
            @pytest.mark.toolstorm(rules=DOWN)
            def test_its_own_rules_under_an_explored_class(self, toolstorm, shipping_server):
                pass
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            # The closer rules replace the class's, and require_triggered (the class's default) still holds them.
            '*rule "late" (route "POST /ship"): Triggered 0 time(s); never eligible: 1 call(s) on routes matching "POST /ship", none at the ordinals*',
            "FAILED test_merged.py::TestShipping::test_its_own_rules_win*",
            # Explore would replace the test's rules: the conflict fails the test rather than drop them.
            "*@pytest.mark.toolstorm got rules and explore=*",
            "FAILED test_merged.py::TestExplored::test_its_own_rules_under_an_explored_class*",
        ]
    )
    assert "test_keeps_the_class_rules" not in result.stdout.str()  # it passed: it got the class's rules
