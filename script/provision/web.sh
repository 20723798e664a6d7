# shellcheck shell=bash
# A real browser for the tests of the Rack dashboard (the Gemfile's :web group; development only):
# test/support/browser.rb serves a Rack app with WEBrick on 127.0.0.1 and drives Debian 12's Chromium headless
# through its chromedriver with selenium-webdriver. Sourced by script/provision/debian.

# Debian 12's own Chromium and the chromedriver built from the same source, so their versions always match (a
# chromedriver drives only its own major of Chromium). Installed without recommends: the font fontconfig's
# configuration depends on (fonts-dejavu-core, by default) is enough for the pages the tests render.
WEB_HOST_PACKAGES=(chromium chromium-driver)

# Pure-Ruby gems from Debian's arch:all packages (installed with DEBIAN_GEMS), in dependency order. sid's
# selenium-webdriver (4.51) needs Ruby 3.3 and the Gemfile.lock must also install on Ruby 3.2, the gem's oldest Ruby
# (the CI matrix): selenium-webdriver is trixie's 4.4.0, with what its specification allows of its dependencies:
# trixie's childprocess 4.1.0 (< 5; sid has 5.1) and rubyzip 2.3.2 (< 3; sid has 3.7), and websocket (~> 1.0).
# Its rexml is a bundled gem of CRuby 3.3 and 3.4. WEBrick serves the app (rackup's handler); Ruby has not shipped it
# since 3.0. Debian's ruby-childprocess depends on ruby-ffi, a C extension its gem does not declare: childprocess
# loads ffi only for its opt-in posix_spawn (CHILDPROCESS_POSIX_SPAWN) and otherwise forks and execs.
WEB_DEBIAN_GEMS=(ruby-webrick ruby-childprocess/trixie ruby-zip/trixie ruby-websocket ruby-selenium-webdriver/trixie)
