# frozen_string_literal: true

require "test_helper"

module LeaseMachines
  module TestSupport
    # A real browser for the tests of the Rack dashboard: the app served by WEBrick on 127.0.0.1 (a free port the
    # kernel picks) in a thread of the test's own process, and Debian 12's Chromium, headless, driven through its
    # chromedriver by selenium-webdriver (the Gemfile's :web group; bin/setup installs all of them, see
    # script/provision/web.sh). A test includes this module and calls +browse+:
    #
    #   browse(app) do |driver, url|
    #     driver.navigate.to(url)
    #     save_png(driver, File.join(scratch_dir("page"), "page.png"))
    #   end
    #
    # A machine set up without them fails the test, saying to run bin/setup: a skip would let a suite that never
    # opened a page pass. Skipped only where a browser cannot run or would take minutes (+browser!+).
    module Browser
      # Debian's Chromium program itself, not its launcher /usr/bin/chromium, so that the browser runs with FLAGS and
      # nothing else: the launcher adds the flags of /etc/chromium.d (--enable-remote-extensions and an empty
      # --load-extension= among them) and its check of /dev/shm's size fails, in sh, where two mounts answer.
      # LEASE_MACHINES_CHROMIUM and LEASE_MACHINES_CHROMEDRIVER point elsewhere (a machine not set up by bin/setup,
      # with its own Chrome and the chromedriver of that major).
      CHROMIUM = ENV.fetch("LEASE_MACHINES_CHROMIUM", "/usr/lib/chromium/chromium")
      CHROMEDRIVER = ENV.fetch("LEASE_MACHINES_CHROMEDRIVER", "/usr/bin/chromedriver")
      WINDOW = [1280, 900].freeze
      # --headless=new is the full browser without a display (the old headless mode is a separate, thinner one);
      # --no-sandbox because the suite runs as root, where Chromium refuses its sandbox; --disable-dev-shm-usage
      # because a container's /dev/shm may be small (Chromium crashes when it fills, whatever the memory). The rest
      # keep a browser that has no network but loopback from trying to reach Google's services (updates, sync,
      # metrics, its default apps and extensions) and from a first-run's pages, and leave the GPU out of a machine
      # without one.
      FLAGS = %w[--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking
                 --disable-component-update --disable-default-apps --disable-sync --no-first-run
                 --metrics-recording-only --disable-extensions].freeze
      # What every PNG file starts with.
      PNG_SIGNATURE = "\x89PNG\r\n\x1A\n".b.freeze
      # How long chromedriver may take to listen, and a page to show what a test waits for (Selenium::WebDriver::Wait's
      # default is 5 s).
      WAIT = 10

      # Skip where a browser cannot run or would take minutes: under qemu-user without binfmt (NO_SPAWN) no child
      # process can start, chromedriver included, and Chromium is Debian 12's x86_64 build; under GC.stress every
      # allocation of WEBrick's, Selenium's HTTP client's and its JSON runs the GC, for nothing, since the browser is
      # a process GC.stress does not reach. Under RBS's runtime checks it runs: the app is served in this process,
      # where the checks see every call it makes into the gem's signatures; against the installed gem
      # (LEASE_MACHINES_TEST_INSTALLED) too, since the dashboard is the gem's. Anywhere else a missing browser or gem
      # fails the test.
      def browser!
        skip "cannot start chromedriver here (qemu-user without binfmt)" if NO_SPAWN
        skip "too slow under GC.stress; the plain suite covers it" if GC_STRESS
        { CHROMIUM => %w[chromium LEASE_MACHINES_CHROMIUM],
          CHROMEDRIVER => %w[chromium-driver LEASE_MACHINES_CHROMEDRIVER] }.each do |path, (package, variable)|
          next if File.executable?(path)

          flunk "#{path} is missing: run bin/setup (it installs Debian 12's #{package}), or point #{variable} at one"
        end
        begin
          require "rackup/handler/webrick"
          require "selenium-webdriver"
          # Selenium 4.4 autoloads this file for Remote::COMMANDS, which it does not define (it defines
          # Remote::Bridge::COMMANDS): loaded first, Ruby has no autoload to warn about under -w (rake test).
          require "selenium/webdriver/remote/commands"
        rescue LoadError => e
          flunk "#{e.message}: run bin/setup (the Gemfile's :web group)"
        end
      end

      # Serves +app+ and opens a browser on a fresh profile; yields the driver and the server's URL
      # ("http://127.0.0.1:PORT/"), then quits the browser, chromedriver and the server, however the block ends.
      def browse(app, &)
        browser!
        serve(app) { |url| drive(url, &) }
      end

      # Opens a browser on a fresh profile for a page served elsewhere (+url+, such as another process's server);
      # yields the driver and +url+, then quits the browser and chromedriver, however the block ends.
      def drive(url)
        browser!
        Dir.mktmpdir("lease_machines-chromium") do |dir|
          chromedriver(dir) do |driver_url|
            driver = start_session(driver_url, dir)
            begin
              yield driver, url
            ensure
              driver.quit
            end
          end
        end
      end

      # Waits until the block returns a truthy value (NoSuchElementError counts as not yet), and returns it.
      def wait_for(message, timeout: WAIT, &block)
        Selenium::WebDriver::Wait.new(timeout: timeout, message: message).until(&block)
      end

      # Saves what the browser's window shows as a PNG at +path+ (its folder made first) and returns +path+.
      def save_png(driver, path)
        FileUtils.mkdir_p(File.dirname(path))
        driver.save_screenshot(path)
        path
      end

      private

      # +app+ served on 127.0.0.1: Port 0 has the kernel pick a free port when WEBrick binds, in new, so the port is
      # known and connections are queued before the server's thread runs. No access log, and of WEBrick's own only
      # its errors, on stderr: an exception the app raised (the page shows WEBrick's 500).
      def serve(app)
        server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0, AccessLog: [],
                                         Logger: WEBrick::Log.new($stderr, WEBrick::BasicLog::ERROR))
        server.mount("/", Rackup::Handler::WEBrick, app)
        thread = Thread.new { server.start }
        begin
          yield "http://127.0.0.1:#{server.config[:Port]}/"
        ensure
          server.shutdown
          thread.join(5) or thread.kill
        end
      end

      # chromedriver, started here rather than by Selenium: Selenium 4.4 starts it through childprocess, which forks,
      # and a fork runs the test process's fork hooks in the child before its exec (sqlite3's warns that it closes
      # the connections of a store the test holds open); Process.spawn runs none. --port=0 has it take a free port,
      # which its log names. In a process group of its own, ended with it: a Chromium the session left behind too.
      # Yields chromedriver's URL.
      def chromedriver(dir)
        log = File.join(dir, "chromedriver.log")
        pid = Process.spawn(CHROMEDRIVER, "--port=0", "--log-path=#{log}", in: File::NULL, out: File::NULL,
                                                                          err: File::NULL, pgroup: true)
        begin
          yield "http://127.0.0.1:#{chromedriver_port(pid, log)}"
        ensure
          begin
            Process.kill("TERM", -pid)
            Process.wait(pid)
          rescue Errno::ESRCH, Errno::ECHILD
            nil # it had exited already (chromedriver_port says so)
          end
        end
      end

      # The port chromedriver (+pid+) listens on, from its log, once it says so.
      def chromedriver_port(pid, log)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + WAIT
        loop do
          port = File.exist?(log) && File.read(log)[/ChromeDriver was started successfully on port (\d+)/, 1]
          return Integer(port) if port
          _, status = Process.wait2(pid, Process::WNOHANG)
          raise "#{CHROMEDRIVER} exited (#{status}) before it listened:\n#{log_tail(log)}" if status
          raise "#{CHROMEDRIVER} did not listen within #{WAIT} s:\n#{log_tail(log)}" \
            if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

          sleep 0.01
        end
      end

      # A session of Chromium with FLAGS and its own profile in +dir+ (no run sees another's cookies or cache).
      def start_session(driver_url, dir)
        options = Selenium::WebDriver::Chrome::Options.new(
          binary: CHROMIUM,
          args: [*FLAGS, "--user-data-dir=#{File.join(dir, "profile")}", "--window-size=#{WINDOW.join(",")}"]
        )
        Selenium::WebDriver.for(:chrome, url: driver_url, options: options)
      rescue Selenium::WebDriver::Error::WebDriverError => e
        raise e.class, "#{e.message}\n#{log_tail(File.join(dir, "chromedriver.log"))}"
      end

      def log_tail(log)
        return "(chromedriver wrote no log)" unless File.exist?(log)

        "the end of chromedriver's log:\n#{File.readlines(log).last(20).join}"
      end
    end
  end
end
