"""toolstorm's own failures never let a test pass: a proxy that dies under a test fails that test
and errors the later ones saying why, and rules the test could not set fail it even when the test
caught the error."""

BAD_RULE = '[{"name": "down", "route": "POST /ship", "kind": "unavailble", "calls": [1]}]'
DOWN = '[{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}]'


def test_a_proxy_that_dies_during_a_test_fails_it_and_errors_the_later_tests_saying_why(suite):
    # The agent gives up gracefully on a broken connection, so the test passed with no toolstorm at all.
    suite.makepyfile(
        test_crash="""
        import os, signal, time
        import requests

        def agent(url):
            try:
                return requests.post(url + "/ship", json={"order": "a"}, timeout=5).status_code
            except requests.ConnectionError:
                return "gave up"

        def test_the_proxy_dies_under_it(toolstorm, shipping_server):
            os.kill(toolstorm.proxy.info["pid"], signal.SIGKILL)
            while toolstorm.proxy.running:
                time.sleep(0.01)
            assert agent(toolstorm.url(shipping_server.url)) == "gave up"

        def test_a_later_test(toolstorm, shipping_server):
            assert agent(toolstorm.url(shipping_server.url)) == 201
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-rfE")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "*toolstorm: the proxy this test ran through (toolstorm proxy, pid *) was killed by SIGKILL during the test: the calls after that never reached toolstorm, and the run's rules, report and contracts went with it*",
            "*toolstorm: the session's proxy (toolstorm proxy, pid *) was killed by SIGKILL during an earlier test*",
            "FAILED test_crash.py::test_the_proxy_dies_under_it*",
            "ERROR test_crash.py::test_a_later_test*",
        ]
    )
    assert "ConnectionRefusedError" not in result.stdout.str()


def test_rules_a_test_could_not_set_fail_it_even_when_the_error_was_caught(suite):
    suite.makepyfile(
        test_caught=f"""
        import pytest
        import requests
        import toolstorm as ts

        def test_a_catch_all_swallows_the_rules_error(toolstorm, shipping_server):
            try:
                toolstorm.rules({BAD_RULE})
            except Exception:
                pass  # an agent framework's catch-all
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={{"order": "a"}}, timeout=10).status_code == 201

        def test_rules_set_again_after_an_expected_error(toolstorm, shipping_server):
            with pytest.raises(ts.AdminError):
                toolstorm.rules({BAD_RULE})
            toolstorm.rules({DOWN})
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={{"order": "b"}}, timeout=10).status_code == 503
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*toolstorm: toolstorm.rules() failed in this test, which went on without those rules (the error was caught): AdminError: PUT /rules?run=*: 400 Failed to load rules*$.rules?0?.kind: expected*",
            "FAILED test_caught.py::test_a_catch_all_swallows_the_rules_error*",
        ]
    )
