"""Template banks for the social side of a tutoring session.

Every bank is a tuple of templates (syntax in :mod:`pipeline.synthetic.render`). Alternations and
slot forms multiply: the banks below produce thousands of distinct surface forms. Slots:

``sname`` student as addressed · ``sfirst``/``sfull`` · ``tname`` tutor as addressed by the student ·
``tfirst``/``ttitled`` · ``parent``/``ptitled`` · ``sib`` · ``friend`` · ``teacher`` (titled) ·
``school`` · ``city`` · ``hood`` · ``street`` · ``age`` · ``dob`` · ``email`` · ``pemail`` ·
``phone`` · ``user`` · ``platform`` · ``url`` · ``sid`` · ``idcue`` · ``course`` · ``plaincourse`` ·
``othercue`` · ``other`` · ``day`` · ``when`` (session time) · ``sdate`` (session date) · ``ph``
(an already-anonymised placeholder).
"""

from __future__ import annotations

# ---- openings ------------------------------------------------------------------------------
TUTOR_GREET = (
    "{=Hi|Hello|Hey|Hi there|Good afternoon|Good evening|Welcome back|Hey there} {sname}{=!|!|.|,| :)}",
    "{=Hi|Hello|Hey} {sname}{=!|.|,} {=How are you today?|How's it going?|Ready to get started?|How was your day?|Nice to see you again.|Are you ready for some math?}",
    "{=Hi|Hello} {sname}, I'm {tfirst} and I'll be your tutor {=today|tonight|for this session}.",
    "{=Hi|Hello}! My name is {ttitled} and I'll be working with you today. {=Are you|Is this} {sname}?",
    "Good {=morning|afternoon|evening} {sname}! {=Let's get started.|What are we working on today?|Did you bring your homework?}",
    "{sname}! {=Welcome back|Great to see you again|Glad you could make it}{=!|.}",
    "{=Hey|Hi} {sname:lower}{=|!|,} {=you there?|can you hear me?|are you ready?}",
    "Hello, is this {sfull}?",
    "welcome {sname}{=|!} what do you want to work on {=today|tonight}?",
    "{=Hi|Hello}, this is {tfirst} from the tutoring center. {=Nice to meet you|Good to meet you}, {sname}{=!|.}",
)
STUDENT_GREET = (
    "{=hi|hey|hello|hii|heyy|yo} {tname}",
    "{=hi|hey|hello} {tname}{=!|.|!!}",
    "{=Hi|Hello}, {=yes|yeah|yep} {=I'm here|im here|this is me}",
    "{=hi|hey}{=| im ready| i'm ready| ready}",
    "{=Good|good} {=afternoon|evening|morning} {tname}",
    "hi {=its|it's|this is} {sfirst}{=| here}",
    "{=yes|yeah|yea} {=im|I'm|i'm} {sfirst}",
    "hey {tname:lower} sorry {=im|I'm} late",
    "hello {tname}, {=how are you|how r u|hows it going}?",
    "{=hi|hello|hey}",
)
TUTOR_INTRO = (
    "{=I'm|I am} {tfull} and I {=teach|tutor} math {=at|for} {=the center|this program|online}.",
    "{=Nice to meet you|Great to meet you}{=, I'm|! I'm|! My name is|. My name is} {tfirst}.",
    "You can call me {tfirst}{=, everyone does| if you like|}.",
    "Before we start, can you tell me your {=full name|first and last name|name} {=for my notes|for the attendance sheet|please}?",
    "{=Just|Quick} {=to confirm|check}, your name is {sfull}, {=right|correct}?",
    "{=A little about me|About me}: I'm a {=junior|senior|sophomore|grad student} at {college}{=, studying {=math|engineering|education|physics}|}.",
    "I {=study|go to school} at {college}{=, but I grew up in {tcity}|}. {=What about you?|Where do you go to school?}",
    "I'm {tfull}{=, your tutor for today|, nice to meet you}. I used to teach at {school2}.",
)
STUDENT_INTRO = (
    "{=my name is|my names|im|I'm|it's} {sfull}",
    "{sfull}",
    "{=I'm|im} {sfirst}",
    "{=I'm|im} {sfirst} but {=my friends call me|everyone calls me|u can call me} {nick}",
    "{=yes|yeah} {=it's|its} {sfull}",
    "{=My|my} name is {sfirst} and {=I'm|im} in {grade} grade",
    "{=Hi|hi}, {=I'm|im} {sfull}, {=I'm|im} {age} and I go to {school}{=| in {city}}.",
    "{sfull}, {grade} grade, {school}",
    "{=its|it's} {sfirst}{=! |. }{=I'm|im} {age}{=| and in {grade} grade}",
    "{=my|My} name is {sfirst} {=but|and} {=everyone calls me|my friends call me} {nick}{=| lol}",
)

# ---- chit-chat: (tutor asks, student answers) pairs, tightly matched ----------------------
ASK_SCHOOL = (
    "What school do you go to?",
    "Which school are you at this year?",
    "{=Remind me|Tell me again}, where do you go to school?",
    "Are you still at the same school as last year?",
    "What's the name of your school?",
)
ANSWER_SCHOOL = (
    "i go to {school}",
    "{=I go to|I'm at|im at|i'm at|I attend|i attend} {school}{=.||, its in {city}| in {city}}",
    "{school}{=| lol|, its ok|!}",
    "{=we just moved so|this year} {=im|I'm} at {school}{=| now}",
    "{=no|nope}, i {=switched to|moved to|go to} {school} {=now|this year}",
    "{school}{=, |. }{=its|it's} {=a charter|a magnet|the big one|near my house}",
    "{=it's|its} called {school}",
)
ASK_SCHOOL_DAY = (
    "How {=was|is} school {=today|this week}?",
    "Anything fun happen at school {=today|this week}?",
    "How's your math class going?",
    "Who's your math teacher this year?",
)
ANSWER_SCHOOL_DAY = (
    "it was {=ok|fine|boring|good|long} we had a {=test|quiz|fire drill|sub} at {school}",
    "{=my|My} {=math|homeroom} teacher is {teacher}{=| and she gives so much homework| and he's nice|, {=they're|she's|he's} strict}",
    "{=good|ok|fine}, {teacher:poss} class was {=fun|boring|hard} today",
    "im in {teacher:poss} {=homeroom|class} at {school}",
    "{=good|ok}{=,|.} {friend} and i {=got in trouble|won the math game|sat together} {=lol|haha|}",
    "{=bad|meh}{=, |. }{teacher} {=gave us a pop quiz|took my phone|moved my seat}",
    "{teacher}{=| for math| but we have a sub}",
)
ASK_PLACE = (
    "Where are you {=joining|calling|logging in} from {=today|tonight}?",
    "Where do you live{=, if you don't mind me asking|}?",
    "Are you at home {=right now|today}?",
    "What city are you in?",
)
ANSWER_PLACE = (
    "{=im in|I'm in|i live in|I live in|from} {city}",
    "{city}{=|, it's {=hot|cold|raining} here}",
    "i live in {hood} {=in|near} {city}",
    "{=we live on|i live on|I live at} {street}{=| in {city}}",
    "{=yes |yeah |}{=at home|home} in {city}",
    "{=no|nah} {=im|I'm} at my {=grandma|abuela|aunt|dad}{=s|'s} {=house|place} in {city}",
    "{=near|by} {street} in {hood}",
    "we just moved from {city} to {city2}",
    "its {=snowing|raining|so hot} in {city} {=rn|right now|today}",
    "{hood}{=|, in {city}}",
)
ASK_ADDRESS = (
    "Where should we mail your {=certificate|workbook|prize}?",
    "What address should the {=books|materials} go to?",
)
ANSWER_ADDRESS = (
    "{street}{=|, {city}}",
    "{=its|it's|send it to} {street}{=| in {city}}",
    "{=my|our} address is {street}{=|, {city}}",
)
ASK_AGE = (
    "How old are you{=, if you don't mind me asking|| now}?",
    "{=And|So} how old are you?",
    "What grade are you in, and how old are you?",
)
ANSWER_AGE = (
    "{=I'm|im|i'm|I am} {age}",
    "{=I'm|I am|im} {age} years old",
    "{age}{=| lol| years old}",
    "{=I'm|im} {age}{=,| and} in {grade} grade",
    "{grade} grade, {=im|I'm} {age}",
    "{=i turn|I turn|im turning} {age} {=next month|in {=two|2|three} weeks|on my birthday}",
    "{=I'm|im} {age} and my {sibrel} {sib} is {sibage}",
    "{=I'm|I am} {age}{=.|!} {=how old are you|are you in college}?",
)
ASK_BIRTHDAY = (
    "When is your birthday?",
    "Is your birthday coming up?",
    "{=Did you have|Was there} a birthday recently?",
)
ANSWER_BIRTHDAY = (
    "{=my|My} {=birthday|bday|b-day} is {dob}{=| so im turning {age} soon|!}",
    "I was born on {dob}",
    "{dob}{=| !| lol}",
    "{=yes|yeah|yea}, {dob}{=!|}",
    "{dob} is my birthday",
    "{=it's|its} {dob}, {=im|I'm} having a party",
    "{=no|nah} its {=not til|on} {dob}",
)
ASK_FAMILY = (
    "Who helps you with homework at home?",
    "Is {=your mom|your dad|anyone} {=around|home} {=today|right now}?",
    "{=Did|Does} your {=mom|dad|family} {=know|remember} about our session {=today|this week}?",
)
ANSWER_FAMILY = (
    "{=my|My} {prel} {parent} {=helps me|helps|does}{=| sometimes}",
    "my {prel} is at work, {ppro} name is {parent} if u need it",
    "{=my|My} {prel} {ptitled} {=wanted me to ask|said to ask} about {=next week|the schedule}",
    "{=no|nope} just me and my {sibrel} {sib}",
    "{=yes|yeah} {parent} is {=here|in the kitchen|downstairs}",
    "{=my|My} {prel} {=knows|does}{=| she set it up| he set it up}",
)
ASK_SIBLINGS = (
    "Do you have any brothers or sisters?",
    "Who's that in the background?",
    "Is it noisy at home {=today|right now}?",
)
ANSWER_SIBLINGS = (
    "{=yeah|yes} {=my|a} {=little|big|older|younger} {sibrel} {sib}",
    "{=my|My} {sibrel} {sib:poss} in {=kindergarten|2nd grade|high school|college}",
    "{sib} {=is|keeps} {=annoying me|being loud|playing fortnite} {=lol|}",
    "{=thats|that's} my {sibrel} {sib}{=, {ppro2} is {sibage}|}",
    "{=yes|yeah} {sib} and {sib2}",
)
ASK_FRIENDS = (
    "Do you study with anyone?",
    "How did you hear about tutoring?",
    "Who do you sit with in math?",
)
ANSWER_FRIENDS = (
    "my {=best friend|friend|cousin} {friend} {=also |}goes to {school}",
    "{friend} {=told me|said} {=you were|ur} {=nice|good at explaining}",
    "{=with|w/} {friend}{=| sometimes}",
    "{friend:poss} {=mom|dad} {=told|recommended} my {prel}",
    "{=no one|nobody}{=| lol}",
)
ASK_GAMES = (
    "What do you like to do {=for fun|after school|on weekends}?",
    "Do you play any games?",
    "What did you do this weekend?",
)
ANSWER_GAMES = (
    "i play {platform}{=| a lot| every day}, my {=username|user|name} is {user}",
    "{=add|Add} me on {platform}{=|!}: {user}",
    "{=my|My} {platform} is {user}{=| lol}",
    "{=my|My} {=gamer tag|gamertag|tag} is {user}{=| if u play}",
    "{=I|i} {=like|love} {=drawing|reading|dancing|swimming|coding}{=|, and my cat}",
    "{=soccer|basketball|piano|drawing|minecraft|volleyball} and {=stuff|gaming|reading}",
    "{user} is my {platform}{=| name}",
)
ASK_ONLINE = (
    "Do you post your {=projects|art|videos} anywhere?",
    "Do you have a {=portfolio|website|channel}?",
)
ANSWER_ONLINE = (
    "i have a {=youtube|channel|blog|page}: {url}",
    "{=check out|look at} my {=art|drawings|videos|projects|page} {url}",
    "{=i|I} {=made|built} a {=game|project} on scratch, {url}",
    "{=yeah|yes} {url}",
    "{url}{=| lol| its not much}",
)
ASK_SPORTS = (
    "Do you play any sports?",
    "How was {=practice|your game} {=yesterday|this weekend}?",
)
ANSWER_SPORTS = (
    "i play {=soccer|basketball|football|baseball} {=at|for} {school}, {othercue} {other}",
    "{=good|ok} we won{=!|}. {othercue} {other}",
    "{othercue} {other}{=| lol}",
    "{=soccer|basketball|softball} {=at|with} {school}",
)

# ---- contact, accounts and scheduling -----------------------------------------------------
ASK_EMAIL = (
    "What's the best email to send the worksheet to?",
    "Can you {=give me|send me} {=your|a parent's} email so I can send {=the notes|today's notes|the practice sheet}?",
    "What email should I use for the {=reminder|homework help|progress report}?",
)
ANSWER_EMAIL = (
    "{=its|it's|my email is|email:} {email}",
    "{email}",
    "{=you can|u can} {=email|send it to} {=me at |}{email}",
    "{=my|My} {prel}{=s|'s} email is {pemail}",
    "{=Email|email} me at {email} or {=text|call} {phone}",
    "{email}{=| thats my school one| or {pemail}}",
)
ASK_PHONE = (
    "Do you have a {=phone number|number} {=your parents|your family|we} can use to reschedule?",
    "What number should I text {=the reminder|the schedule} to?",
)
ANSWER_PHONE = (
    "{=my|My} {=number|phone|cell} is {phone}",
    "{=call|text} my {prel} at {phone}",
    "{phone}{=| thats my {prel}s}",
    "{=its|it's} {phone}",
)
ASK_ID = (
    "What's your student {=ID|id|number} so I can {=log the session|find your account}?",
    "Can you {=log in|sign in} with your student id?",
    "I need your {idcue} for the {=portal|attendance sheet}.",
)
ANSWER_ID = (
    "{=my|My} {idcue} is {sid}",
    "{idcue}: {sid}",
    "{sid}{=| is my {idcue}}",
    "{=i|I} {=forgot|dont remember} my {=password|login} but my {idcue} is {sid}",
    "{=its|it's} {sid}",
)
ASK_LOGIN = (
    "What's your username on the practice site?",
    "What name do you log in with?",
)
ANSWER_LOGIN = (
    "{=my|My} {=username|login} is {user}",
    "{user}",
    "{=its|it's} {user}{=| with a capital letter}",
)
TUTOR_CONTACT_GIVE = (
    "You can {=email|reach} me at {temail} {=if you get stuck|any time|with questions}.",
    "{=If you need to reschedule|For scheduling}, call the {=center|office} at {tphone}.",
    "My email is {temail}{=.|, write it down!}",
)
TUTOR_SCHEDULE = (
    "Same time next {day}?",
    "{=Our|The} next session is {day} at {when}{=.|, see you then!}",
    "{=Can we|Could we} meet on {sdate} at {when} instead?",
    "I have you down for {day} {sdate} at {when}.",
    "Let's {=do|schedule} {=two|2} sessions next week: {day} and {day2}.",
    "{=Remember|Don't forget}, no session on {sdate} because of the holiday.",
    "We have about {=ten|10|fifteen|15|five|5} minutes left{=.|, let's try one more.}",
)
STUDENT_SCHEDULE = (
    "{=ok|okay|sure|yes} {day} {=works|is good|is fine}",
    "{=can|could} we do {when} {=instead|tho}? i have {=practice|soccer|band|church} {day}",
    "{=my|My} {=test|quiz|final|exam} is on {sdate}{=| so can we review before}",
    "{=ok|k} see you {day}",
    "{day} at {when}?",
)
COURSE_TALK = (
    "this is for my {course} {=class|homework|final}",
    "{=im|I'm|i'm} taking {course} {=this semester|this year|online|at {school}}",
    "{=we|We} {=started|just started|are doing} {=polynomials|functions|proofs|ratios|slope} in {course}",
    "{=its|it's} from {course}, {=unit|chapter|section} {unit}",
    "my {course} teacher {teacher} {=said|says} we can use a calculator",
    "{=this|it} was on {=the|my} {course} {=quiz|test|midterm}",
    "{=it's|its} for {plaincourse}{=| not the honors one}",
    "{=we|We} did this in {plaincourse} {=last week|yesterday|today}",
    "i {=hate|like|love} {plaincourse}{=| lol}",
)
TUTOR_COURSE = (
    "Is this for your {course} class?",
    "{=Which|What} class is this {=for|from}?",
    "{=Is this|Is that} {plaincourse} or something else?",
    "{=In|For} {course}, {=you'll|we'll} need this for the {=next unit|final|quiz}.",
)

# ---- praise, encouragement, wrap-up -------------------------------------------------------
TUTOR_PRAISE = (
    "{=Good job|Great job|Nice work|Excellent|Awesome|Well done|Perfect|Great thinking|Nice|Exactly right}{=, |! | }{sname}{=!|!|.|!!| :)}",
    "{=good job|nice|great work} {sname:lower}",
    "{=That's right|Correct|Yes|You got it}{=, |! }{sname}{=!|.}",
    "{sname}, {=that's|that is} {=exactly right|perfect|correct|a great answer}{=!|.}",
    "{=Way to go|Keep it up|You're on fire|Look at you go}, {sname}{=!|.}",
    "{=I'm|I am} {=proud of you|impressed}, {sname}{=!|.}",
    "{=Excellent work!|Great job!|Nice work!} {=Plus one point|That's three in a row|Keep going}.",
    "{=Yes!|Correct!|Right!} {=Good job|Well done}.",
)
TUTOR_ENCOURAGE = (
    "{=That's okay|No worries|It's okay|Don't worry}, {sname}{=, let's try again|. Let's look at it together|, mistakes help us learn}.",
    "{=Not quite|Almost|Close}{=, |! }{sname}{=.|!} {=Check your work|Try again|Look at the second step}.",
    "{sname}, {=take your time|no rush|think about it for a second}.",
    "{=Hmm|Okay}, {=not quite|close}. {=What did you do first?|Can you show me your steps?|Let's check that.}",
)
TUTOR_BYE = (
    "{=Great|Nice|Good} {=work|session|job} today, {sname}{=!|.} See you {day}{=!|.}",
    "{=Bye|Goodbye|Take care|Have a good night|Have a great weekend}, {sname}{=!|.| :)}",
    "{=That's all for today|We're out of time}. {=Thanks|Thank you}, {sname}{=!|.}",
    "{=Bye|bye} {sname:lower}{=!| see u {day}|}",
    "Tell your {prel} I said hi. {=Bye|Take care}, {sname}{=!|.}",
    "{=Great|Good} job today{=!|.} {=See you next time|See you {day}|Bye}.",
)
STUDENT_BYE = (
    "{=bye|byee|bye bye|thank you|thanks|thx} {tname}{=!|| :)}",
    "{=ok|okay} {=bye|thanks|thank you}",
    "{=thank you|thanks|ty} {=so much|}{=!|}",
    "{=see|c} {=you|u} {day}{=!|}",
    "{=bye|goodbye}{=!|}",
)
STUDENT_FILLER = (
    "{=ok|okay|k|kk|ok!|alright}", "{=yes|yeah|yea|yep|ya}", "{=no|nope|nah}", "{=idk|i dont know|I don't know|not sure}",
    "{=wait|hold on|one sec|1 sec|brb}", "{=oh|ohh|oooh} {=ok|i see|i get it|that makes sense}", "{=what|huh|wdym}?",
    "{=can you|can u} {=explain|repeat} {=that|it} {=again|}{=?|}", "{=my|My} {=internet|wifi|computer} is {=slow|lagging}{=| sorry}",
    "{=hold on|wait} my {=brother|sister|dog|mom} {=is talking|is calling me|is being loud}",
    "{=sorry|sory|srry} {=it typed that|typo|wrong one|i pressed enter}", "{=is that right|right?|did i get it}",
)
TUTOR_FILLER = (
    "{=Okay|Alright|Great|Sure}{=.|!}", "{=Take your time|No rush}.", "{=Are you still there|Can you see my screen}?",
    "{=Let me know when you're ready|Tell me when you're done}.", "{=Good question|That's a great question}!",
    "{=Can you type your answer in the chat|Type your answer when you're ready}.",
)

# ---- a parent joins the chat --------------------------------------------------------------
PARENT_LINES = (
    "{=Hi|Hello}, this is {sfirst:poss} {prel}, {parentfull}.",
    "{=Hi|Hello} {tname}, {=I'm|this is} {ptitled}, {sfirst:poss} {prel}.",
    "{=You can reach me at|My number is|Please text me at} {phone}{=.| if anything comes up.}",
    "My email is {pemail}{=.|, please send the progress report there.}",
    "{=Can we|Could we} move {=next week's|Thursday's} session? {sfirst} has {=a dentist appointment|practice|a field trip}.",
    "{sfirst:poss} {idcue} is {sid} if you need it for the portal.",
    "Thank you so much for helping {sfirst}{=!|.}",
    "We live in {city}, {=so|and} {=evenings|afternoons} work best for us.",
)
TUTOR_TO_PARENT = (
    "{=Nice to meet you|Hello}, {ptitled}{=!|.} {sfirst} is doing {=great|really well|better every week}.",
    "Thanks, {parent}. I'll send the {=notes|report|practice sheet} to {pemail}.",
    "{=Of course|No problem}{=, |! }{ptitled}. {=We can move it to|How about} {day} at {when}?",
)

# ---- placeholders: already anonymised, never PII ------------------------------------------
PLACEHOLDER_LINES = (
    "{=Good job|Nice work|Great|Yes}, {ph}{=!|.}",
    "{ph} {=said|thinks} the answer {=was|is} {phnum}{=.|, do you agree?}",
    "{=Can|Could} {ph} {=read|explain} {=the next one|their answer|what they did}?",
    "{=Let's|Let us} hear from {ph}{=.|!}",
    "I agree with {ph}{=.|!| on this one.}",
    "What did {ph} get{=?| for number {phnum}?}",
)
PLACEHOLDERS = (
    "[STUDENT]", "[STUDENT]", "Student A", "Student B", "Student C", "Student D", "Student K",
    "Student M", "Student S", "Student T", "[NAME]", "[TUTOR]", "<NAME>", "Student J",
)

# ---- inside the maths: asides with PII, generic talk, and words that only look like names --
STUDENT_ASIDE = (
    "sorry {=my|My} {sibrel} {sib} {=is yelling|keeps talking|took my pencil|is being loud}",
    "{=brb|hold on} my {prel} {=is calling me|needs me}",
    "{=my|My} {=teacher|math teacher} {teacher} {=said|says} {=we have to show our work|we cant use calculators|this is on the test}",
    "{teacher} {=did it a different way|taught us a trick for this|never explains it like this}",
    "{friend} {=got|said} a different answer{= on the homework|}",
    "{=can|could} {friend} join next time? {=shes|hes|they're} in my class",
    "{=sorry|sry} {=im|I'm} at my {=grandma|aunt|cousin}{=s|'s} in {city} today",
    "{=lol|haha} {sib} says hi",
    "{=sorry|sry} i was at my locker{=,|.} {othercue} {other}{= lol|}",
)
TUTOR_MATH_TALK = (
    "{=What do you notice?|What do you see first?|What is the question asking?}",
    "{=Can you show me your work?|How did you get that?|Walk me through your steps.}",
    "{=Let's try the next one.|Ready for the next question?|Here comes the practice question.}",
    "{=Read the question carefully.|Read it one more time.|Let's underline the important parts.}",
    "{=Is that your final answer?|Are you sure?|Double-check that.}",
    "{=Good thinking|Nice reasoning|Interesting idea}, {sname}. {=Why did you do that?|Can you explain?}",
    "{sname}, {=what's the first step|where should we start|do you remember the rule}?",
    "{=Write it as an equation|Draw a picture|Make a table} first{=, {sname}|}.",
)
HOMONYM_LINES = (
    "{markverb} the {=point|answer|key words} on the {=number line|graph|worksheet}.",
    "{will} you {=read|try} the {=next one|question} out loud?",
    "We'll {=review|finish} {=fractions|this unit|decimals} in {month}.",
    "{=Look at|Go to} Part {letter} of the worksheet.",
    "{=Point|Label point} {letter} is at the top of the triangle.",
    "{=Put a|Give yourself a} check {mark} next to the ones you got right.",
    "Don't forget to {=carry|borrow} the {=one|1}{=, it's a common mistake|}.",
)
STUDENT_MATH_REPLY = (
    "{=oh|ohh} {=ok|i see|i get it|that makes sense}",
    "{=i dont get it|im confused|i'm lost}{=| sorry}",
    "{=can you|can u} {=explain|show} {=that|it} again{=?|}",
    "{=is this right|did i do it right|am i right}{=?|??}",
    "{=this is hard|this is easy|ugh fractions}",
    "{=i think so|maybe|i guess}",
    "{=wait|hold on} {=let me|lemme} {=check|try again}",
)

SOCIAL_TOPICS = (
    (ASK_SCHOOL, ANSWER_SCHOOL), (ASK_SCHOOL_DAY, ANSWER_SCHOOL_DAY), (ASK_PLACE, ANSWER_PLACE),
    (ASK_ADDRESS, ANSWER_ADDRESS), (ASK_AGE, ANSWER_AGE), (ASK_BIRTHDAY, ANSWER_BIRTHDAY),
    (ASK_FAMILY, ANSWER_FAMILY), (ASK_SIBLINGS, ANSWER_SIBLINGS), (ASK_FRIENDS, ANSWER_FRIENDS),
    (ASK_GAMES, ANSWER_GAMES), (ASK_ONLINE, ANSWER_ONLINE), (ASK_SPORTS, ANSWER_SPORTS),
)
SOCIAL_WEIGHTS = (10, 7, 8, 3, 7, 6, 5, 5, 4, 6, 6, 5)
CONTACT_TOPICS = ((ASK_EMAIL, ANSWER_EMAIL), (ASK_PHONE, ANSWER_PHONE), (ASK_ID, ANSWER_ID), (ASK_LOGIN, ANSWER_LOGIN))
CONTACT_WEIGHTS = (5, 3, 3, 2)

COLLEGES = (
    "UT Austin", "Texas A&M", "Arizona State", "Georgia Tech", "Rutgers", "Penn State", "UCLA", "UC Davis",
    "Michigan State", "Ohio State", "the University of Florida", "Temple", "CUNY Hunter", "Howard",
    "Purdue", "Boston University", "NYU", "San Diego State", "Florida International University",
)

ALL_BANKS = (
    TUTOR_GREET, STUDENT_GREET, TUTOR_INTRO, STUDENT_INTRO,
    *(bank for pair in SOCIAL_TOPICS for bank in pair), *(bank for pair in CONTACT_TOPICS for bank in pair),
    TUTOR_CONTACT_GIVE, TUTOR_SCHEDULE, STUDENT_SCHEDULE, COURSE_TALK, TUTOR_COURSE, TUTOR_PRAISE,
    TUTOR_ENCOURAGE, TUTOR_BYE, STUDENT_BYE, STUDENT_FILLER, TUTOR_FILLER, PARENT_LINES, TUTOR_TO_PARENT,
    PLACEHOLDER_LINES, STUDENT_ASIDE, TUTOR_MATH_TALK, HOMONYM_LINES, STUDENT_MATH_REPLY,
)

# ---- hard negatives: what real tutoring chat is full of and a tagger must leave alone ---------
# slots: ``endear`` (an endearment), ``hesit`` (a filler), ``mword`` (a maths word), ``typo`` (a
# misspelt everyday word, as real students type them); none is PII
HARD_ENDEARMENTS = ("buddy", "sweetie", "bud", "my friend", "kiddo", "champ", "hun", "honey", "dear", "friend")
HARD_FILLERS = ("um", "umm", "uh", "uhh", "hmm", "mhm", "uh huh", "mm", "ok ok", "okay", "oh", "ah")
HARD_MATHS_WORDS = ("denominator", "numerator", "perimeter", "area", "slope", "quotient", "remainder",
                    "hypotenuse", "integer", "variable", "mean", "median", "mode", "range", "prime",
                    "Pythagorean", "Celsius", "Fahrenheit", "Roman numerals", "PEMDAS")
HARD_TYPOS = ("hav", "naswer", "anser", "tomorow", "sessiion", "stuf", "becuz", "ovious", "fishis", "vertice",
              "divison", "nvm", "ez", "wat", "thx", "probly", "awnser", "multipy", "numbr", "equls")
TUTOR_HARD = (
    "{=Good job|Nice work|Great job|That's right|Yes}, {endear}{=!|.}", "{=It's okay|No worries|Almost}, {endear}. "
    "{=Try again|Let's look at it together}.", "{hesit:cap}, {=let's see|let me check|one second}.",
    "{=Mhm|Okay}, {endear}. What's the {mword}?", "{=So|Okay so} the {mword} is what?",
    "{=Remember|Don't forget} {mword}{=.|!}", "{=Thank you|Thanks}, {endear}{=!|.}", "{hesit:cap}. {=Okay|Right}.",
)
STUDENT_HARD = (
    "{hesit}", "{hesit} {=the|its|it's|is it} {mword}{=?|}", "{hesit} {=idk|i think|maybe}", "{mword}{=?|}",
    "{hesit} {hesit}", "{=is it|its} {mword}{=?| right?|}", "{=thank you|thanks|ty} {=|so much}",
    "{=ok|yes|thank you|thanks|sorry} {=maam|mam|ma'am|sir|miss}", "{=yes|no|ok} {=maam|mam|sir}{=|!}",
    "{typo}", "i {=dont|dnt|don't} {=no|know} the {typo}", "{hesit} {typo}{=?|}", "{=wait|so} {typo} {=is|it}",
)
